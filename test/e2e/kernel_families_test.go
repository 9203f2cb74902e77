package e2e

import (
	"net"
	"strconv"
	"testing"

	"github.com/pion/stun/v4"
)

// TestKernelPathFamilies: the kernel path relays ChannelData across IPv6
// and across families, rewriting both IP versions' headers: each datagram
// arrives whole, at the peer from the relay address and at the client on
// its channel, and the kernel counters rise. A v4 client asks for an IPv6
// relay (REQUESTED-ADDRESS-FAMILY); a v6 client without it gets IPv4.
func TestKernelPathFamilies(t *testing.T) {
	k := newKernelNet(t)
	srv := k.start(t, kernelConfig(t), "tc")
	for _, tc := range []struct {
		name, client, server, peer, relay string
		extra                             []stun.Setter
	}{
		{"v6", kClient6, kServer6, kPeer6, kRelay6, []stun.Setter{family6}},
		{"v4 client v6 peer", kClient4, kServer4, kPeer6, kRelay6, []stun.Setter{family6}},
		{"v6 client v4 peer", kClient6, kServer6, kPeer4, kRelay4, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			peer := k.listenPeer(t, tc.peer)
			ch := k.openChannel(t, tc.client, net.JoinHostPort(tc.server, strconv.Itoa(kTURNPort)), peer, tc.extra...)
			if !ch.relay.IP.Equal(net.ParseIP(tc.relay)) {
				t.Fatalf("relayed address %v, want one on %s", ch.relay, tc.relay)
			}
			ch.throughKernel(t, srv, payloads(tc.name, 60))
		})
	}
}
