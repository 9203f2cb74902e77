package e2e

import (
	"net"
	"strconv"
	"strings"
	"testing"

	"github.com/pion/stun/v4"
)

// TestKernelLeavesOversizedToUserSpace: a peer's datagram that the 4-byte
// ChannelData header would push past the client link's MTU (1500), and a
// client's ChannelData that arrives in fragments, go up to user space,
// which still relays them; one byte-size class smaller, both directions go
// through the kernel. Each datagram is counted by the kernel path or not,
// one at a time.
func TestKernelLeavesOversizedToUserSpace(t *testing.T) {
	k := newKernelNet(t)
	srv := k.start(t, kernelConfig(t), "tc")
	for _, tc := range []struct {
		name, client, server, peer string
		extra                      []stun.Setter
		fits                       int // the largest payload that fits 1500 bytes with IP, UDP and ChannelData headers
	}{
		{"v4", kClient4, kServer4, kPeer4, nil, 1500 - 20 - 8 - 4},
		{"v6", kClient6, kServer6, kPeer6, []stun.Setter{family6}, 1500 - 40 - 8 - 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			peer := k.listenPeer(t, tc.peer)
			ch := k.openChannel(t, tc.client, net.JoinHostPort(tc.server, strconv.Itoa(kTURNPort)), peer, tc.extra...)
			ch.throughKernel(t, srv, payloads("warm", 10))
			for _, size := range []int{tc.fits, tc.fits + 4} {
				before := srv.kernel(t)
				ch.relayBoth(t, []string{strings.Repeat("m", size)})
				after := srv.kernel(t)
				want := 0.0
				if size == tc.fits {
					want = 1
				}
				if got := (kernelCount{toPeer: after.toPeer - before.toPeer, toClient: after.toClient - before.toClient}); got.toPeer != want || got.toClient != want {
					t.Errorf("a %d-byte payload: the kernel path relayed %v to the peer and %v to the client, want %v each", size, got.toPeer, got.toClient, want)
				}
			}
		})
	}
}
