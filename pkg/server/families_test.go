package server_test

import (
	"testing"

	"github.com/pion/stun/v4"

	"github.com/turnd/turnd/internal/testturn"
)

// TestBothFamilies: with relay.address naming an IPv4 and an IPv6 address,
// an IPv4 client gets an IPv4 relay by default and an IPv6 one when it asks
// with REQUESTED-ADDRESS-FAMILY, and relays through it to an IPv6 peer.
func TestBothFamilies(t *testing.T) {
	opts := testOptions()
	opts.Config.Relay.Address = "127.0.0.1,::1"
	s := start(t, opts)

	for _, network := range []string{"udp", "tcp"} {
		t.Run(network, func(t *testing.T) {
			v4 := dial(t, s, network)
			if r := v4.MustAllocate(); r.IP.To4() == nil {
				t.Errorf("default relay %v, want IPv4", r)
			}
			c := dial(t, s, network)
			resp := c.Allocate(family(2))
			if code := testturn.ErrorCode(resp); code != 0 {
				t.Fatalf("allocate with REQUESTED-ADDRESS-FAMILY IPv6: error %d", code)
			}
			if r := testturn.Relayed(t, resp); r.IP.To4() != nil || !r.IP.IsLoopback() {
				t.Fatalf("relay %v, want ::1", r)
			}
			// ADDITIONAL-ADDRESS-FAMILY (a dual allocation) is not built:
			// the attribute is comprehension-optional, so the client gets
			// its IPv4 relay alone, as from any server that ignores it.
			dual := dial(t, s, network)
			resp = dual.Allocate(testturn.RawAttr(stun.AttrType(0x8000), []byte{2, 0, 0, 0}))
			if code := testturn.ErrorCode(resp); code != 0 {
				t.Fatalf("allocate with ADDITIONAL-ADDRESS-FAMILY IPv6: error %d", code)
			}
			var relays int
			for _, a := range resp.Attributes {
				if a.Type == stun.AttrXORRelayedAddress {
					relays++
				}
			}
			if r := testturn.Relayed(t, resp); relays != 1 || r.IP.To4() == nil {
				t.Errorf("ADDITIONAL-ADDRESS-FAMILY: %d relayed addresses, first %v; want the IPv4 one alone", relays, r)
			}

			peer := echoPeerOn(t, "[::1]:0")
			mustPermit(t, c, peer)
			mustEcho(t, c, peer, "ipv4 client, ipv6 relay, ipv6 peer over "+network)
		})
	}
}
