package deploytest

import (
	"path"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

const handoverValues = "handover.values.yaml"

// TestChartHandoverMode checks the hand-over mode's rendering: a hostNetwork
// DaemonSet whose rollout puts the new pod beside the old one on its node,
// both sharing the hand-over socket's node directory, the new turnd started
// with --take-over and the old one told to wait for its pod's SIGTERM.
func TestChartHandoverMode(t *testing.T) {
	r := render(t, "-f", valuesFile(handoverValues))
	if r.statefulSet != nil || r.pdb != nil {
		t.Error("StatefulSet or PodDisruptionBudget rendered in hand-over mode")
	}
	ds := r.daemonSet
	if ds == nil {
		t.Fatal("no DaemonSet rendered although handover.enabled is true")
	}
	checkLabels(t, r)
	checkHandoverRollout(t, ds)
	pod, c := r.pod(), r.container(t)
	if !pod.HostNetwork || pod.DNSPolicy != corev1.DNSClusterFirstWithHostNet {
		t.Errorf("hostNetwork %v dnsPolicy %q, want true and ClusterFirstWithHostNet", pod.HostNetwork, pod.DNSPolicy)
	}
	// The surge pod must fit on the node its old pod is on; the user's node
	// affinity still applies.
	if a := pod.Affinity; a == nil || a.NodeAffinity == nil {
		t.Error("the values' node affinity was dropped")
	} else if a.PodAntiAffinity != nil {
		t.Errorf("pod anti-affinity %+v would keep the new pod off its old pod's node", a.PodAntiAffinity)
	}
	// On the host network every declared port is defaulted to a hostPort,
	// which the scheduler counts as taken by the old pod.
	if len(c.Ports) != 0 {
		t.Errorf("container declares ports %+v: as hostPorts they keep the surge pod off its node", c.Ports)
	}
	if !slices.Equal(c.Args, []string{"serve", "--take-over", "--config=/etc/turnd/config/turnd.yaml"}) {
		t.Errorf("args = %q, want serve --take-over --config=...", c.Args)
	}
	if c.Lifecycle != nil {
		t.Errorf("lifecycle hooks %+v: the hand-over and the drain need none", c.Lifecycle)
	}

	cfg := onlyConfig(t, r)
	if cfg.Handover == nil {
		t.Fatal("turnd.yaml has no handover section")
	}
	wantEqual(t, "handover.after", cfg.Handover.After, "wait")
	wantEqual(t, "handover.timeout", cfg.Handover.Timeout, "20s")
	checkHandoverSocket(t, r, cfg.Handover.Socket, "/run/turnd-rtc")
	checkHandoverProbes(t, r)

	// The old pod still drains its TLS clients after SIGTERM.
	if got, want := *pod.TerminationGracePeriodSeconds, int64(2*3600+10+30); got != want {
		t.Errorf("terminationGracePeriodSeconds = %d, want %d (drain 10s + 2h + 30s margin)", got, want)
	}
	timeout, err := time.ParseDuration(cfg.Handover.Timeout)
	if err != nil {
		t.Fatal(err)
	}
	if time.Duration(ds.Spec.MinReadySeconds)*time.Second <= timeout {
		t.Errorf("minReadySeconds %d does not exceed handover.timeout %s", ds.Spec.MinReadySeconds, timeout)
	}
}

// checkHandoverRollout: one new pod per node beside the old one, and the old
// one kept until the new one is available.
func checkHandoverRollout(t *testing.T, ds *appsv1.DaemonSet) {
	t.Helper()
	u := ds.Spec.UpdateStrategy
	if u.Type != appsv1.RollingUpdateDaemonSetStrategyType || u.RollingUpdate == nil ||
		u.RollingUpdate.MaxSurge == nil || u.RollingUpdate.MaxUnavailable == nil {
		t.Fatalf("updateStrategy = %+v, want RollingUpdate with maxSurge and maxUnavailable", u)
	}
	if *u.RollingUpdate.MaxSurge != intstr.FromInt32(1) || *u.RollingUpdate.MaxUnavailable != intstr.FromInt32(0) {
		t.Errorf("maxSurge %s maxUnavailable %s, want 1 and 0",
			u.RollingUpdate.MaxSurge.String(), u.RollingUpdate.MaxUnavailable.String())
	}
}

// checkHandoverSocket: the config's socket lies in a directory mounted from
// the node (so the old and the new pod share it), writable, and handed to
// the pod's user before turnd starts.
func checkHandoverSocket(t *testing.T, r rendered, socket, hostPath string) {
	t.Helper()
	pod := r.pod()
	dir := path.Dir(socket)
	mounts := r.container(t).VolumeMounts
	i := slices.IndexFunc(mounts, func(m corev1.VolumeMount) bool { return m.MountPath == dir })
	if i < 0 || mounts[i].ReadOnly || mounts[i].SubPath != "" {
		t.Fatalf("handover.socket %s: no writable whole-directory mount at %s in %+v", socket, dir, mounts)
	}
	v := volume(t, pod, mounts[i].Name)
	if v.HostPath == nil || v.HostPath.Path != hostPath || v.HostPath.Type == nil ||
		*v.HostPath.Type != corev1.HostPathDirectoryOrCreate {
		t.Errorf("volume %s = %+v, want hostPath %s, DirectoryOrCreate", v.Name, v.VolumeSource, hostPath)
	}
	// The kubelet creates the directory as root: something must give it to
	// turnd's user before turnd binds the socket.
	if len(pod.InitContainers) != 1 {
		t.Fatalf("init containers = %d, want one that hands %s to the pod's user", len(pod.InitContainers), dir)
	}
	ic := pod.InitContainers[0]
	// turnd's user: the container's own (UID 0 with offload), else the pod's.
	uid := *pod.SecurityContext.RunAsUser
	if sc := r.container(t).SecurityContext; sc != nil && sc.RunAsUser != nil {
		uid = *sc.RunAsUser
	}
	want := []string{"chown", itoa(int32(uid)) + ":" + itoa(int32(*pod.SecurityContext.RunAsGroup)), dir}
	if !slices.Equal(ic.Command, want) {
		t.Errorf("init container command = %q, want %q", ic.Command, want)
	}
	if !slices.ContainsFunc(ic.VolumeMounts, func(m corev1.VolumeMount) bool { return m.Name == v.Name && m.MountPath == dir }) {
		t.Errorf("init container mounts %+v, want %s at %s", ic.VolumeMounts, v.Name, dir)
	}
	if sc := ic.SecurityContext; sc == nil || sc.Capabilities == nil ||
		!slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) ||
		!slices.Equal(sc.Capabilities.Add, []corev1.Capability{"CHOWN"}) {
		t.Errorf("init container securityContext %+v, want all capabilities dropped but CHOWN", ic.SecurityContext)
	}
}

// checkHandoverProbes: with no named container ports, probes and Service
// target ports are the configured numbers; readiness stays /readyz.
func checkHandoverProbes(t *testing.T, r rendered) {
	t.Helper()
	c := r.container(t)
	cfg := onlyConfig(t, r)
	_, httpPort, _ := strings.Cut(cfg.HTTP.Address, "}:")
	for _, p := range []struct {
		name  string
		probe *corev1.Probe
		path  string
	}{
		{"readiness", c.ReadinessProbe, "/readyz"},
		{"liveness", c.LivenessProbe, "/healthz"},
		{"startup", c.StartupProbe, "/healthz"},
	} {
		if p.probe == nil || p.probe.HTTPGet == nil || p.probe.HTTPGet.Path != p.path ||
			p.probe.HTTPGet.Port.String() != httpPort {
			t.Errorf("%s probe = %+v, want GET %s on port %s", p.name, p.probe, p.path, httpPort)
		}
	}
	for _, sp := range r.service.Spec.Ports {
		if sp.TargetPort.Type != intstr.Int || sp.TargetPort.IntVal != sp.Port {
			t.Errorf("Service port %s targets %s, want the number %d (no container port names it)",
				sp.Name, sp.TargetPort.String(), sp.Port)
		}
	}
}

// TestChartHandoverRefusesShortMinReady: a new pod must stay ready longer
// than a hand-over can take before the old pod is deleted.
func TestChartHandoverRefusesShortMinReady(t *testing.T) {
	_, err := helmTemplate(t, "-f", valuesFile(handoverValues), "--set", "handover.minReadySeconds=20")
	if err == nil || !strings.Contains(err.Error(), "handover.minReadySeconds: 20 must exceed handover.timeout (20s)") {
		t.Errorf("render with minReadySeconds = handover.timeout: %v, want the chart's refusal", err)
	}
}

// TestChartHandoverOffIgnoresItsValues: with handover.enabled false, the
// hand-over's other values change nothing in the output.
func TestChartHandoverOffIgnoresItsValues(t *testing.T) {
	plain, err := helmTemplate(t, "-f", valuesFile("defaults.values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	set, err := helmTemplate(t, "-f", valuesFile("defaults.values.yaml"), "--set", "handover.enabled=false",
		"--set", "handover.hostPath=/elsewhere", "--set-string", "handover.timeout=1m", "--set", "handover.minReadySeconds=90",
		"--set", "handover.initImage=")
	if err != nil {
		t.Fatal(err)
	}
	if plain != set {
		t.Error("hand-over values changed the StatefulSet mode's output")
	}
}

// TestChartHandoverWithoutInitImage: nodes that provide the directory get no
// init container, and the rest is unchanged.
func TestChartHandoverWithoutInitImage(t *testing.T) {
	r := render(t, "-f", valuesFile(handoverValues), "--set", "handover.initImage=")
	if n := len(r.pod().InitContainers); n != 0 {
		t.Errorf("init containers = %d with handover.initImage empty, want 0", n)
	}
	if !slices.Contains(r.container(t).Args, "--take-over") {
		t.Error("no --take-over without an init image")
	}
}

func TestHelmLintStrictHandover(t *testing.T) {
	helm := tool(t, "HELM", "helm")
	stdout, stderr, err := run(nil, helm, "lint", "--strict", chartDir, "-f", valuesFile(handoverValues))
	if err != nil {
		t.Fatalf("helm lint --strict: %v\n%s%s", err, stdout, stderr)
	}
	for _, line := range strings.Split(stdout+stderr, "\n") {
		if strings.Contains(line, "[WARNING]") || strings.Contains(line, "[ERROR]") {
			t.Errorf("helm lint: %s", line)
		}
	}
}

// TestHandoverConfigPassesCheckConfig: turnd accepts the hand-over mode's
// turnd.yaml (its handover section included).
func TestHandoverConfigPassesCheckConfig(t *testing.T) {
	bin := turndBin(t)
	r := render(t, "-f", valuesFile(handoverValues))
	_, files := r.configFiles(t)
	checkConfig(t, bin, "turnd.yaml", files["turnd.yaml"], "192.0.2.1")
}
