package e2e

import (
	"net"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// TestKernelStopsAtDrainDeadline: during a drain the kernel path keeps
// relaying live allocations; at the drain's deadline turnd ends them and
// exits, and from then nothing is relayed, by the kernel nor otherwise.
func TestKernelStopsAtDrainDeadline(t *testing.T) {
	k := newKernelNet(t)
	cfg := kernelConfig(t)
	cfg.Drain.Timeout = 2 * time.Second
	srv := k.start(t, cfg, "tc")
	peer := k.listenPeer(t, kPeer4)
	ch := k.openChannel(t, kClient4, net.JoinHostPort(kServer4, strconv.Itoa(kTURNPort)), peer)
	ch.throughKernel(t, srv, payloads("before", 30))

	srv.signal(syscall.SIGTERM)
	srv.waitLog("drain started", 5*time.Second)
	ch.throughKernel(t, srv, payloads("draining", 30))
	if code := srv.waitExit(cfg.Drain.Timeout + 5*time.Second); code != 0 {
		t.Fatalf("turnd exited with %d after the drain's deadline", code)
	}
	if recs := srv.usageRecords("udp", ""); len(recs) != 1 {
		t.Fatalf("%d usage records at the drain's deadline, want the channel's allocation's", len(recs))
	}
	ch.requireStopped(t, nil, 30, false)
}
