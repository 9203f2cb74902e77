package e2e

import (
	"net"
	"strconv"
	"testing"
)

// TestKernelLeavesRateLimitedToUserSpace: an allocation held to a rate is
// relayed in user space, where the limit is enforced: a reload that sets
// limits.max_bps takes a live channel out of the kernel (its datagrams
// still arrive, none counted by the kernel path), and one that lifts it
// puts the channel back.
func TestKernelLeavesRateLimitedToUserSpace(t *testing.T) {
	k := newKernelNet(t)
	cfg := kernelConfig(t)
	srv := k.start(t, cfg, "tc")
	peer := k.listenPeer(t, kPeer4)
	ch := k.openChannel(t, kClient4, net.JoinHostPort(kServer4, strconv.Itoa(kTURNPort)), peer)
	ch.throughKernel(t, srv, payloads("unlimited", 30))

	limited := cfg
	limited.Limits.MaxBPS = 10_000_000 // 30 datagrams fit its 100 ms burst
	srv.reload(t, limited)
	before := srv.kernel(t)
	ch.relayBoth(t, payloads("limited", 30))
	if after := srv.kernel(t); after != before {
		t.Errorf("with limits.max_bps the kernel path relayed %v to the peer and %v to the client, want none",
			after.toPeer-before.toPeer, after.toClient-before.toClient)
	}

	srv.reload(t, cfg)
	ch.throughKernel(t, srv, payloads("lifted", 30))
}
