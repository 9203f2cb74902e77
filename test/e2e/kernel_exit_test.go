package e2e

import (
	"net"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// TestKernelStopsAtDrainDeadline: during a drain the kernel path keeps
// relaying live allocations; at the drain's deadline turnd ends them, with
// what the kernel relayed in their usage records, and exits, and from then
// nothing is relayed, by the kernel nor otherwise.
func TestKernelStopsAtDrainDeadline(t *testing.T) {
	k := newKernelNet(t)
	cfg := kernelConfig(t)
	cfg.Drain.Timeout = 2 * time.Second
	srv := k.start(t, cfg, "tc")
	peer := k.listenPeer(t, kPeer4)
	ch := k.openChannel(t, kClient4, net.JoinHostPort(kServer4, strconv.Itoa(kTURNPort)), peer)
	sent := append(append(payloads("before", 30), payloads("draining", 30)...), payloads("unread", 30)...)
	ch.throughKernel(t, srv, sent[:30])

	srv.signal(syscall.SIGTERM)
	srv.waitLog("drain started", 5*time.Second)
	ch.throughKernel(t, srv, sent[30:60])
	// Not read before the deadline: only the fold as the allocation ends
	// brings these into its record.
	ch.relayBoth(t, sent[60:])
	if code := srv.waitExit(cfg.Drain.Timeout + 5*time.Second); code != 0 {
		t.Fatalf("turnd exited with %d after the drain's deadline", code)
	}
	// What the kernel relayed is in the record the deadline writes.
	recs := srv.usageRecords("udp", "drain_deadline")
	size := 0
	for _, p := range sent {
		size += len(p)
	}
	if len(recs) != 1 || recs[0]["to_peer_packets"] != float64(len(sent)) || recs[0]["from_peer_packets"] != float64(len(sent)) ||
		recs[0]["to_peer_bytes"] != float64(size) || recs[0]["from_peer_bytes"] != float64(size) {
		t.Fatalf("usage records at the drain's deadline %v, want one with %d packets and %d bytes each way", recs, len(sent), size)
	}
	ch.requireStopped(t, nil, 30, false)
}

// TestKernelStopsWhenTurndIsKilled: turnd killed outright (SIGKILL) leaves
// nothing relaying in the kernel, where nothing would count it: its
// channels reach the peer no more. A turnd started again in its place
// attaches afresh and relays a new allocation in the kernel.
func TestKernelStopsWhenTurndIsKilled(t *testing.T) {
	k := newKernelNet(t)
	cfg := kernelConfig(t)
	srv := k.start(t, cfg, "tc")
	server := net.JoinHostPort(kServer4, strconv.Itoa(kTURNPort))
	peer := k.listenPeer(t, kPeer4)
	ch := k.openChannel(t, kClient4, server, peer)
	ch.throughKernel(t, srv, payloads("before", 30))

	srv.signal(syscall.SIGKILL)
	if sig := srv.killedBy(5 * time.Second); sig != syscall.SIGKILL {
		t.Fatalf("turnd ended by %v, want SIGKILL", sig)
	}
	ch.requireStopped(t, nil, 30, false)

	again := k.start(t, cfg, "tc")
	k.openChannel(t, kClient4, server, peer).throughKernel(t, again, payloads("again", 30))
}
