package server_test

import (
	"testing"

	"github.com/pion/stun/v4"

	"github.com/turnd/turnd/internal/testturn"
)

// TestBothFamilies: with relay.address naming an IPv4 and an IPv6 address,
// an IPv4 client gets an IPv4 relay by default and an IPv6 one when it asks
// with REQUESTED-ADDRESS-FAMILY, and relays through it to an IPv6 peer;
// with ADDITIONAL-ADDRESS-FAMILY IPv6 it gets both, IPv4 first (RFC 8656
// §7.2, a dual allocation).
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
			dual := dial(t, s, network)
			resp = dual.Allocate(testturn.RawAttr(stun.AttrType(0x8000), []byte{2, 0, 0, 0}))
			if code := testturn.ErrorCode(resp); code != 0 {
				t.Fatalf("allocate with ADDITIONAL-ADDRESS-FAMILY IPv6: error %d", code)
			}
			var relays []string
			for _, a := range resp.Attributes {
				if a.Type == stun.AttrXORRelayedAddress {
					var x stun.XORMappedAddress
					if err := x.GetFromAs(&stun.Message{Raw: resp.Raw, TransactionID: resp.TransactionID, Attributes: stun.Attributes{a}}, stun.AttrXORRelayedAddress); err == nil {
						relays = append(relays, x.IP.String())
					}
				}
			}
			if len(relays) != 2 || relays[0] != "127.0.0.1" || relays[1] != "::1" {
				t.Errorf("ADDITIONAL-ADDRESS-FAMILY: relayed addresses %q, want 127.0.0.1 then ::1", relays)
			}

			peer := echoPeerOn(t, "[::1]:0")
			mustPermit(t, c, peer)
			mustEcho(t, c, peer, "ipv4 client, ipv6 relay, ipv6 peer over "+network)
		})
	}
}
