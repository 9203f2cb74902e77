package deploytest

import (
	"slices"
	"strconv"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// checkInvariants asserts what every rendering must keep, whatever the
// values: the design decisions of the chart (README.md) as checks.
func checkInvariants(t *testing.T, tc chartCase, r rendered) {
	t.Helper()
	checkLabels(t, r)
	checkNoHandover(t, r)
	checkStatefulSet(t, r)
	checkGracePeriod(t, tc, r)
	checkContainer(t, tc, r)
	checkPDBAndService(t, r)
}

func checkLabels(t *testing.T, r rendered) {
	t.Helper()
	for _, m := range r.objects {
		for _, key := range []string{
			"app.kubernetes.io/name", "app.kubernetes.io/instance", "app.kubernetes.io/version",
			"app.kubernetes.io/managed-by", "app.kubernetes.io/component", "helm.sh/chart",
		} {
			if m.Labels[key] == "" {
				t.Errorf("%s: label %s missing", m.Name, key)
			}
		}
	}
}

// checkNoHandover: with handover.enabled false (every chartCase) nothing of
// the hand-over mode leaks into the drain mode's objects.
func checkNoHandover(t *testing.T, r rendered) {
	t.Helper()
	if r.daemonSet != nil || r.statefulSet == nil {
		t.Fatal("a DaemonSet rendered, or no StatefulSet, although handover.enabled is false")
	}
	pod := r.pod()
	for _, v := range pod.Volumes {
		if v.HostPath != nil {
			t.Errorf("volume %s is a hostPath (%s) although handover.enabled is false", v.Name, v.HostPath.Path)
		}
	}
	if len(pod.InitContainers) != 0 {
		t.Errorf("init containers %v rendered although handover.enabled is false", pod.InitContainers)
	}
	if slices.Contains(r.container(t).Args, "--take-over") {
		t.Errorf("args %q take over although handover.enabled is false", r.container(t).Args)
	}
	if r.secret != nil {
		_, files := r.configFiles(t)
		for name, data := range files {
			if parseTurndConfig(t, data).Handover != nil {
				t.Errorf("%s has a handover section although handover.enabled is false", name)
			}
		}
	}
}

func checkStatefulSet(t *testing.T, r rendered) {
	t.Helper()
	s := r.statefulSet.Spec
	pod := r.pod()
	if !pod.HostNetwork {
		t.Error("hostNetwork is not true")
	}
	if pod.DNSPolicy != corev1.DNSClusterFirstWithHostNet {
		t.Errorf("dnsPolicy = %q, want ClusterFirstWithHostNet", pod.DNSPolicy)
	}
	if s.PodManagementPolicy != appsv1.ParallelPodManagement {
		t.Errorf("podManagementPolicy = %q, want Parallel", s.PodManagementPolicy)
	}
	if s.UpdateStrategy.Type != appsv1.RollingUpdateStatefulSetStrategyType ||
		s.UpdateStrategy.RollingUpdate == nil || s.UpdateStrategy.RollingUpdate.MaxUnavailable == nil {
		t.Errorf("updateStrategy = %+v, want RollingUpdate with maxUnavailable", s.UpdateStrategy)
	}
	if s.ServiceName != r.service.Name {
		t.Errorf("serviceName = %q, want the headless Service %q", s.ServiceName, r.service.Name)
	}
	podLabels := labels.Set(s.Template.Labels)
	if sel, err := labelsSelector(s.Selector); err != nil || !sel.Matches(podLabels) {
		t.Errorf("selector %v does not match the pod labels %v (%v)", s.Selector, podLabels, err)
	}
	if pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken {
		t.Error("automountServiceAccountToken is not false")
	}
	if r.secret != nil && s.Template.Annotations["checksum/config"] == "" {
		t.Error("no checksum/config annotation although the chart renders the config")
	}

	// Required, not preferred: two pods on one node would collide on ports.
	if pod.Affinity == nil || pod.Affinity.PodAntiAffinity == nil {
		t.Fatal("no pod anti-affinity")
	}
	terms := pod.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution
	if len(terms) != 1 || terms[0].TopologyKey != "kubernetes.io/hostname" {
		t.Fatalf("required anti-affinity = %+v, want one term on kubernetes.io/hostname", terms)
	}
	if sel, err := labelsSelector(terms[0].LabelSelector); err != nil || !sel.Matches(podLabels) {
		t.Errorf("anti-affinity selector %v does not match the pod's own labels (%v)", terms[0].LabelSelector, err)
	}

	sc := pod.SecurityContext
	if sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || sc.RunAsUser == nil || *sc.RunAsUser != 65532 ||
		sc.SeccompProfile == nil || sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("pod securityContext = %+v, want runAsNonRoot, runAsUser 65532, seccomp RuntimeDefault", sc)
	}
}

// checkGracePeriod: the kubelet must not SIGKILL turnd before its own drain
// deadline. The deadline comes from the rendered turnd.yaml, or from the case
// when the file is the user's.
func checkGracePeriod(t *testing.T, tc chartCase, r rendered) {
	t.Helper()
	var drain int64
	if r.secret != nil {
		_, files := r.configFiles(t)
		for _, data := range files {
			drain = max(drain, parseTurndConfig(t, data).drainSeconds(t))
		}
	} else {
		drain = goDrainSeconds(t, tc.drainDelay, tc.drainTimeout)
	}
	got := r.pod().TerminationGracePeriodSeconds
	if got == nil || *got < drain {
		t.Errorf("terminationGracePeriodSeconds = %v, shorter than drain.delay + drain.timeout = %ds", got, drain)
	}
}

func checkContainer(t *testing.T, tc chartCase, r rendered) {
	t.Helper()
	c := r.container(t)
	// turnd drains by itself on SIGTERM: any hook would only delay or
	// duplicate that.
	if c.Lifecycle != nil {
		t.Errorf("container has lifecycle hooks %+v, want none (no preStop)", c.Lifecycle)
	}
	httpPort := slices.IndexFunc(c.Ports, func(p corev1.ContainerPort) bool { return p.Name == "http" })
	if httpPort < 0 {
		t.Fatal("no container port named http")
	}
	for _, p := range c.Ports {
		// On the host network a hostPort, if given, must equal the port.
		if p.HostPort != 0 && p.HostPort != p.ContainerPort {
			t.Errorf("port %s: hostPort %d != containerPort %d", p.Name, p.HostPort, p.ContainerPort)
		}
	}
	for _, p := range []struct {
		name  string
		probe *corev1.Probe
		path  string
	}{
		{"readiness", c.ReadinessProbe, "/readyz"},
		{"liveness", c.LivenessProbe, "/healthz"},
		{"startup", c.StartupProbe, "/healthz"},
	} {
		if p.probe == nil || p.probe.HTTPGet == nil {
			t.Errorf("%s probe: want an HTTP GET, got %+v", p.name, p.probe)
			continue
		}
		if p.probe.HTTPGet.Path != p.path || p.probe.HTTPGet.Port.String() != "http" {
			t.Errorf("%s probe: GET %s on port %s, want %s on port http", p.name, p.probe.HTTPGet.Path,
				p.probe.HTTPGet.Port.String(), p.path)
		}
	}
	env := slices.IndexFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == "TURND_NODE_IP" })
	if env < 0 || c.Env[env].ValueFrom == nil || c.Env[env].ValueFrom.FieldRef == nil ||
		c.Env[env].ValueFrom.FieldRef.FieldPath != "status.hostIP" {
		t.Errorf("TURND_NODE_IP: want it from the downward API status.hostIP, env = %+v", c.Env)
	}

	sc := c.SecurityContext
	if sc == nil || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
		sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem || sc.Capabilities == nil {
		t.Fatalf("container securityContext = %+v, want allowPrivilegeEscalation false, readOnlyRootFilesystem true", sc)
	}
	if !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) {
		t.Errorf("capabilities.drop = %v, want [ALL]", sc.Capabilities.Drop)
	}
	checkOffloadPrivileges(t, r, tc.offload, tc.bindService)
}

func checkPDBAndService(t *testing.T, r rendered) {
	t.Helper()
	podLabels := labels.Set(r.statefulSet.Spec.Template.Labels)
	if r.pdb == nil {
		t.Error("no PodDisruptionBudget")
	} else {
		if sel, err := labelsSelector(r.pdb.Spec.Selector); err != nil || !sel.Matches(podLabels) {
			t.Errorf("PDB selector %v does not match the pods (%v)", r.pdb.Spec.Selector, err)
		}
		if r.pdb.Spec.MaxUnavailable == nil {
			t.Error("PDB has no maxUnavailable")
		}
	}
	svc := r.service.Spec
	if svc.ClusterIP != corev1.ClusterIPNone {
		t.Errorf("Service clusterIP = %q, want None (headless)", svc.ClusterIP)
	}
	if svc.PublishNotReadyAddresses {
		t.Error("Service publishes not-ready addresses: draining pods would stay in DNS")
	}
	if !labels.SelectorFromSet(svc.Selector).Matches(podLabels) || len(svc.Selector) == 0 {
		t.Errorf("Service selector %v does not select the pods", svc.Selector)
	}
}

func labelsSelector(s *metav1.LabelSelector) (labels.Selector, error) {
	return metav1.LabelSelectorAsSelector(s)
}

func itoa(n int32) string { return strconv.Itoa(int(n)) }
