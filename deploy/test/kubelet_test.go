package deploytest

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// The tests here stand in for the kubelet: they run the rendered pod's
// container as the kubelet would, from the rendered objects only, so that a
// chart change (the config path, an env var, a probe) is exercised rather
// than mirrored by hand.

// node is where a pod runs: its name and address as the downward API gives
// them, and the network namespace standing for it ("" is this host).
type node struct {
	name string
	ip   netip.Addr
	ns   netns
}

// httpProbe is an httpGet probe resolved against the container.
type httpProbe struct {
	path    string
	port    int
	timeout time.Duration
}

// pod is the container of the rendered StatefulSet made runnable.
type pod struct {
	args                         []string // the container's args, mounts mapped to local directories
	env                          []string
	startup, liveness, readiness httpProbe
	// ports are the container's ports by name (turn-udp, turn-tcp, http).
	ports map[string]int
	// startupBudget is how long the kubelet lets the startup probe fail.
	startupBudget    time.Duration
	terminationGrace time.Duration
}

var varRef = regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)

// planPod reads what the kubelet needs from the rendered chart for a pod on
// n. It fails on anything it cannot stand in for (other volumes, env
// sources, probe kinds, a preStop hook), so the chart cannot grow a
// dependency on Kubernetes that these tests silently skip.
func planPod(t *testing.T, r rendered, n node) pod {
	t.Helper()
	spec, c := r.pod(), r.container(t)
	if !spec.HostNetwork {
		t.Fatal("kubelet stand-in: the pod is not on the host network, so probes would not go to the node address")
	}
	if len(c.Command) != 0 {
		t.Fatalf("kubelet stand-in: the container overrides the image's entrypoint (%q); turnd is the entrypoint", c.Command)
	}
	if c.Lifecycle != nil && (c.Lifecycle.PreStop != nil || c.Lifecycle.PostStart != nil) {
		t.Fatalf("kubelet stand-in: lifecycle hooks %+v are not run here, and turnd's drain must not need one", c.Lifecycle)
	}
	p := pod{terminationGrace: time.Duration(*spec.TerminationGracePeriodSeconds) * time.Second, ports: map[string]int{}}
	for _, cp := range c.Ports {
		p.ports[cp.Name] = int(cp.ContainerPort)
	}

	env := map[string]string{}
	for _, e := range c.Env {
		switch {
		case e.ValueFrom == nil:
			env[e.Name] = e.Value
		case e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "status.hostIP",
			e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "status.podIP":
			env[e.Name] = n.ip.String() // the same on the host network
		case e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "spec.nodeName":
			env[e.Name] = n.name
		default:
			t.Fatalf("kubelet stand-in: env %s has a source it cannot fill: %+v", e.Name, e.ValueFrom)
		}
		p.env = append(p.env, e.Name+"="+env[e.Name])
	}

	// Mount the config Secret: its data as files in a directory.
	mountDir := t.TempDir()
	mounts := map[string]string{}
	for _, m := range c.VolumeMounts {
		v := volume(t, spec, m.Name)
		if v.Secret == nil || r.secret == nil || v.Secret.SecretName != r.secret.Name {
			t.Fatalf("kubelet stand-in: volume %s is not the chart's config Secret: %+v", m.Name, v.VolumeSource)
		}
		dir := filepath.Join(mountDir, m.Name)
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		for name, data := range r.secret.Data {
			if err := os.WriteFile(filepath.Join(dir, name), data, 0o400); err != nil {
				t.Fatal(err)
			}
		}
		mounts[m.MountPath] = dir
	}

	for _, a := range c.Args {
		// Kubernetes expands $(VAR) from the container's env in args.
		a = varRef.ReplaceAllStringFunc(a, func(ref string) string {
			if v, ok := env[ref[2:len(ref)-1]]; ok {
				return v
			}
			return ref
		})
		for path, dir := range mounts {
			a = strings.ReplaceAll(a, path+"/", dir+"/")
		}
		p.args = append(p.args, a)
	}

	p.startup = resolveProbe(t, c, c.StartupProbe)
	p.startupBudget = time.Duration(c.StartupProbe.PeriodSeconds*c.StartupProbe.FailureThreshold) * time.Second
	p.liveness = resolveProbe(t, c, c.LivenessProbe)
	p.readiness = resolveProbe(t, c, c.ReadinessProbe)
	return p
}

func volume(t *testing.T, spec *corev1.PodSpec, name string) corev1.Volume {
	t.Helper()
	for _, v := range spec.Volumes {
		if v.Name == name {
			return v
		}
	}
	t.Fatalf("volume mount %s names no volume", name)
	return corev1.Volume{}
}

// resolveProbe turns an httpGet probe's named port into a number, as the
// kubelet does with the container's ports.
func resolveProbe(t *testing.T, c *corev1.Container, p *corev1.Probe) httpProbe {
	t.Helper()
	if p == nil || p.HTTPGet == nil {
		t.Fatalf("kubelet stand-in: probe %+v is not an httpGet probe", p)
	}
	g := p.HTTPGet
	if g.Host != "" || (g.Scheme != "" && g.Scheme != corev1.URISchemeHTTP) || len(g.HTTPHeaders) != 0 {
		t.Fatalf("kubelet stand-in: httpGet %+v needs more than GET http://podIP:port/path", g)
	}
	hp := httpProbe{path: g.Path, timeout: time.Duration(p.TimeoutSeconds) * time.Second}
	if g.Port.Type == intstr.Int {
		hp.port = int(g.Port.IntVal)
		return hp
	}
	for _, cp := range c.Ports {
		if cp.Name == g.Port.StrVal {
			hp.port = int(cp.ContainerPort)
			return hp
		}
	}
	t.Fatalf("probe port %q names no container port", g.Port.StrVal)
	return hp
}

// start runs the container on n: turnd as the image's entrypoint, behind
// `ip netns exec` when the node is a namespace.
func (p pod) start(t *testing.T, bin string, n node, name string) *turndProc {
	t.Helper()
	argv := append([]string{bin}, p.args...)
	if n.ns != "" {
		argv = append([]string{tool(t, "IP_BIN", "ip"), "netns", "exec", string(n.ns)}, argv...)
	}
	return startProc(t, name, argv, p.env)
}

// probe runs an httpGet probe against the pod on n with client (whose
// sockets must be where the kubelet's would be) and returns the status code.
func (hp httpProbe) probe(client *http.Client, n node) (int, error) {
	url := "http://" + net.JoinHostPort(n.ip.String(), strconv.Itoa(hp.port)) + hp.path
	c := *client
	c.Timeout = hp.timeout
	resp, err := c.Get(url)
	if err != nil {
		return 0, fmt.Errorf("probe %s: %w", url, err)
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

// waitReady waits for turnd's "turnd serving" line, then runs the startup
// probe and the readiness probe until each passes, as the kubelet does before
// it counts the pod ready. Probing is the kubelet's own polling: every 20 ms
// here rather than every periodSeconds, bounded by the startup probe's
// budget (at most 10 s) and the line turnd logs once its sockets are bound.
func (p pod) waitReady(t *testing.T, proc *turndProc, client *http.Client, n node) time.Time {
	t.Helper()
	proc.waitLog("turnd serving", 10*time.Second)
	deadline := time.Now().Add(min(p.startupBudget, 10*time.Second))
	for _, hp := range []httpProbe{p.startup, p.readiness} {
		for {
			code, err := hp.probe(client, n)
			if err == nil && code == http.StatusOK {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: probe %s never passed: %d %v", proc.name, hp.path, code, err)
			}
			time.Sleep(20 * time.Millisecond) // the kubelet's probe period, shortened
		}
	}
	return time.Now()
}
