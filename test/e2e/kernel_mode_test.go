package e2e

import (
	"net"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestKernelAutoReportsTC: relay.offload auto, where the kernel and
// privileges allow, runs the tc path: /status says so with both of
// turnd's interfaces, and a channel goes through the kernel.
func TestKernelAutoReportsTC(t *testing.T) {
	k := newKernelNet(t)
	srv := k.start(t, kernelConfig(t), "auto")
	st := srv.status(t)
	if st.Offload == nil || st.Offload.Mode != "tc" {
		t.Fatalf("/status offload %+v, want mode tc", st.Offload)
	}
	got := slices.Sorted(slices.Values(st.Offload.Interfaces))
	if !slices.Equal(got, []string{"t0", "t1"}) {
		t.Errorf("/status offload interfaces %v, want t0 and t1", st.Offload.Interfaces)
	}
	peer := k.listenPeer(t, kPeer4)
	ch := k.openChannel(t, kClient4, net.JoinHostPort(kServer4, strconv.Itoa(kTURNPort)), peer)
	ch.throughKernel(t, srv, payloads("auto", 30))
}

// TestKernelAutoFallsBackWithoutPrivileges: relay.offload auto, where
// turnd may not load eBPF programs (no CAP_BPF, CAP_NET_ADMIN nor
// CAP_SYS_ADMIN), serves from user space: /status says off and why, turnd
// logs why once, and a channel still relays, none of it in the kernel.
func TestKernelAutoFallsBackWithoutPrivileges(t *testing.T) {
	k := newKernelNet(t)
	srv := k.startVia(t, kernelConfig(t), "auto",
		[]string{"setpriv", "--bounding-set", "-bpf,-net_admin,-sys_admin,-perfmon", "--inh-caps", "-bpf,-net_admin,-sys_admin,-perfmon"})
	st := srv.status(t)
	if st.Offload == nil || st.Offload.Mode != "off" || st.Offload.Reason == "" {
		t.Fatalf("/status offload %+v, want mode off with a reason", st.Offload)
	}
	if r := st.Offload.Reason; !strings.Contains(r, "CAP_BPF and CAP_NET_ADMIN") || strings.ContainsAny(r, "\n") || strings.Contains(r, "MEMLOCK") {
		t.Errorf("offload reason %q, want one line naming the capabilities, and no hint at RLIMIT_MEMLOCK", r)
	}
	lines := 0
	srv.mu.Lock()
	for _, l := range srv.lines {
		for _, v := range l {
			if s, ok := v.(string); ok && strings.Contains(s, st.Offload.Reason) {
				lines++
				break
			}
		}
	}
	srv.mu.Unlock()
	if lines != 1 {
		t.Errorf("%d log lines give the reason %q, want one:\n%s", lines, st.Offload.Reason, srv.logText())
	}
	peer := k.listenPeer(t, kPeer4)
	ch := k.openChannel(t, kClient4, net.JoinHostPort(kServer4, strconv.Itoa(kTURNPort)), peer)
	ch.relayBoth(t, payloads("user", 30))
	if got := srv.kernel(t); got != (kernelCount{}) {
		t.Errorf("the kernel path counted %+v under auto without privileges, want nothing", got)
	}
}

// TestKernelTCFailsStartWhenItCannotAttach: relay.offload tc is a promise;
// where the program cannot attach (an interface that does not exist)
// turnd refuses to start and says why, rather than serve from user space.
func TestKernelTCFailsStartWhenItCannotAttach(t *testing.T) {
	k := newKernelNet(t)
	cfg := kernelConfig(t)
	cfg.Relay.OffloadInterfaces = []string{"nosuch0"}
	code, out := k.startFails(t, cfg, "tc")
	if code == 0 || !strings.Contains(out, "nosuch0") {
		t.Fatalf("turnd with relay.offload tc on a missing interface: exit %d, want an error naming it:\n%s", code, out)
	}
}
