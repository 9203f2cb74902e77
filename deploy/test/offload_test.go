package deploytest

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// offloadCaps are what the kernel fast path needs: bpf(2) to load the tc
// program and its maps, NET_ADMIN to load a tc program and attach it.
var offloadCaps = []corev1.Capability{"BPF", "NET_ADMIN"}

// checkOffloadPrivileges: the turnd container holds the fast path's
// capabilities, as UID 0, exactly when offload is on, and no container holds
// them otherwise. Everything else in its securityContext stays as tight as
// without offload.
func checkOffloadPrivileges(t *testing.T, r rendered, offload, bindService bool) {
	t.Helper()
	c := r.container(t)
	sc := c.SecurityContext
	if sc == nil || sc.Capabilities == nil {
		t.Fatalf("turnd container securityContext = %+v, want capabilities", sc)
	}
	var want []corev1.Capability
	if offload {
		want = slices.Clone(offloadCaps)
	}
	if bindService {
		want = append(want, "NET_BIND_SERVICE")
	}
	if !slices.Equal(sc.Capabilities.Add, want) {
		t.Errorf("capabilities.add = %v, want %v", sc.Capabilities.Add, want)
	}
	if !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) {
		t.Errorf("capabilities.drop = %v, want [ALL]", sc.Capabilities.Drop)
	}
	if sc.Privileged == nil || *sc.Privileged || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
		sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
		t.Errorf("turnd container: privileged %v allowPrivilegeEscalation %v readOnlyRootFilesystem %v, want false, false, true",
			deref(sc.Privileged), deref(sc.AllowPrivilegeEscalation), deref(sc.ReadOnlyRootFilesystem))
	}
	if offload {
		// Added capabilities reach only UID 0 after exec: the image's
		// binary has no file capabilities.
		if sc.RunAsUser == nil || *sc.RunAsUser != 0 || sc.RunAsNonRoot == nil || *sc.RunAsNonRoot {
			t.Errorf("turnd container runAsUser %v runAsNonRoot %v, want 0 and false", sc.RunAsUser, sc.RunAsNonRoot)
		}
	} else if sc.RunAsUser != nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot {
		t.Errorf("turnd container runAsUser %v runAsNonRoot %v, want the pod's 65532 and true", sc.RunAsUser, sc.RunAsNonRoot)
	}
	pod := r.pod()
	if !pod.HostNetwork {
		t.Error("hostNetwork is not true: tcx would attach to the pod's own interfaces")
	}
	for _, other := range pod.InitContainers {
		if other.SecurityContext == nil || other.SecurityContext.Capabilities == nil {
			continue
		}
		for _, added := range other.SecurityContext.Capabilities.Add {
			if slices.Contains(offloadCaps, added) {
				t.Errorf("init container %s holds %s", other.Name, added)
			}
		}
	}
}

func deref(b *bool) any {
	if b == nil {
		return nil
	}
	return *b
}

// TestChartOffloadOffRendersAsBefore: with offload off the chart renders
// byte for byte what it rendered before the kernel path existed (the files
// under testdata/golden), in drain and hand-over mode and with
// NET_BIND_SERVICE; and off given explicitly, or as the false a bare off
// becomes, changes only the config (so its checksum), not the pod.
// TURND_UPDATE_GOLDEN=1 rewrites the files after an intended change.
func TestChartOffloadOffRendersAsBefore(t *testing.T) {
	for _, name := range []string{"defaults", "handover", "low-ports"} {
		t.Run(name, func(t *testing.T) {
			out, err := helmTemplate(t, "-f", valuesFile(name+".values.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			matchGolden(t, name, out, "offload off")
			if strings.Contains(out, "BPF") || strings.Contains(out, "NET_ADMIN") {
				t.Error("offload off renders BPF or NET_ADMIN")
			}

			base := render(t, "-f", valuesFile(name+".values.yaml")).podTemplate()
			for _, off := range [][]string{
				{"--set", "config.relay.offload=off"},
				{"--set-json", "config.relay.offload=false"},
			} {
				r := render(t, append([]string{"-f", valuesFile(name + ".values.yaml")}, off...)...)
				wantEqual(t, strings.Join(off, " ")+": relay.offload", onlyConfig(t, r).Relay.Offload, "off")
				got := r.podTemplate().DeepCopy()
				delete(got.Annotations, "checksum/config")
				wantPod := base.DeepCopy()
				delete(wantPod.Annotations, "checksum/config")
				if !reflect.DeepEqual(got, wantPod) {
					t.Errorf("%s changes the pod template", strings.Join(off, " "))
				}
			}
		})
	}
}

// firstDiff shows where two renderings part, with a little context.
func firstDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < max(len(w), len(g)); i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			return "line " + itoa(int32(i+1)) + ":\n- " + wl + "\n+ " + gl
		}
	}
	return "(equal)"
}

// TestChartOffloadHandover: the hand-over DaemonSet grants the fast path
// the same way as the StatefulSet, the node directory for the hand-over
// socket belongs to the UID turnd then runs as (root without
// CAP_DAC_OVERRIDE cannot write into 65532's directory), and the rendering
// passes `helm lint --strict`.
func TestChartOffloadHandover(t *testing.T) {
	args := []string{"-f", valuesFile(handoverValues), "--set", "config.relay.offload=tc"}
	r := render(t, args...)
	if r.daemonSet == nil {
		t.Fatal("no DaemonSet rendered although handover.enabled is true")
	}
	checkOffloadPrivileges(t, r, true, false)
	wantEqual(t, "relay.offload", onlyConfig(t, r).Relay.Offload, "tc")
	init := r.pod().InitContainers
	if len(init) != 1 || !slices.Equal(init[0].Command, []string{"chown", "0:65532", "/run/turnd"}) {
		t.Errorf("init containers = %+v, want one that chowns /run/turnd to 0:65532", init)
	}
	checkHandoverSocket(t, r, onlyConfig(t, r).Handover.Socket, "/run/turnd-rtc")

	off := render(t, "-f", valuesFile(handoverValues))
	checkOffloadPrivileges(t, off, false, false)
	if init := off.pod().InitContainers; len(init) != 1 || !slices.Equal(init[0].Command, []string{"chown", "65532:65532", "/run/turnd"}) {
		t.Errorf("offload off: init containers = %+v, want one that chowns /run/turnd to 65532", init)
	}

	stdout, stderr, err := run(nil, tool(t, "HELM", "helm"), append([]string{"lint", "--strict", chartDir}, args...)...)
	if err != nil || strings.Contains(stdout+stderr, "[WARNING]") || strings.Contains(stdout+stderr, "[ERROR]") {
		t.Errorf("helm lint --strict: %v\n%s%s", err, stdout, stderr)
	}
}

// matchGolden compares a render with testdata/golden/NAME.yaml, what
// naming the render in the failure; TURND_UPDATE_GOLDEN=1 rewrites the
// file first, after an intended change.
func matchGolden(t *testing.T, name, out, what string) {
	t.Helper()
	golden := filepath.Join("testdata", "golden", name+".yaml")
	if os.Getenv("TURND_UPDATE_GOLDEN") == "1" {
		if err := os.WriteFile(golden, []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if out != string(want) {
		t.Errorf("%s renders differently from %s:\n%s", what, golden, firstDiff(string(want), out))
	}
}
