package turn_test

import (
	"github.com/turnd/turnd/pkg/turn"
	"net/netip"
	"slices"
	"testing"

	"github.com/pion/stun/v4"
)

// TestBinding: RFC 8489 §7.3.1 — a Binding request gets XOR-MAPPED-ADDRESS
// with the client's transport address, IPv4 and IPv6, unsigned whatever it
// carries, with FINGERPRINT only when the request had one; an unknown
// comprehension-required attribute is 420 with UNKNOWN-ATTRIBUTES, unsigned.
func TestBinding(t *testing.T) {
	e := newEnv(t)
	for _, tc := range []struct {
		name        string
		client      string
		pkt         []byte
		fingerprint bool
		unknown     []stun.AttrType
	}{
		{"IPv4, header only", "192.0.2.1:40000", raw(t, stun.TransactionID, stun.BindingRequest), false, nil},
		{"IPv6 with FINGERPRINT", "[2001:db8::7]:41000", raw(t, stun.TransactionID, stun.BindingRequest, stun.Fingerprint), true, nil},
		{"signed: still unsigned", "192.0.2.1:40000", e.build(t, stun.MethodBinding, aliceUser()), true, nil},
		{"unknown comprehension-required attribute: 420", "192.0.2.1:40000",
			raw(t, stun.TransactionID, stun.BindingRequest, stun.RawAttribute{Type: 0x7F01, Value: []byte{1}}), false,
			[]stun.AttrType{0x7F01}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, l := udpClient(1)
			c.Tuple.Client = netip.MustParseAddrPort(tc.client)
			resp := e.ask(t, c, l, tc.pkt)
			if resp.Contains(stun.AttrMessageIntegrity) {
				t.Error("Binding answer signed")
			}
			if resp.Contains(stun.AttrFingerprint) != tc.fingerprint {
				t.Errorf("FINGERPRINT %v, want %v", resp.Contains(stun.AttrFingerprint), tc.fingerprint)
			}
			if tc.unknown != nil {
				var u stun.UnknownAttributes
				if code, _ := codeOf(resp); code != 420 || u.GetFrom(resp) != nil || !slices.Equal([]stun.AttrType(u), tc.unknown) {
					t.Fatalf("answered %d with UNKNOWN-ATTRIBUTES %v, want 420 listing %v", code, u, tc.unknown)
				}
				return
			}
			if resp.Type != stun.BindingSuccess {
				t.Fatalf("answered %v, want a Binding success", resp.Type)
			}
			var xa stun.XORMappedAddress
			if err := xa.GetFrom(resp); err != nil {
				t.Fatal(err)
			}
			ip, _ := netip.AddrFromSlice(xa.IP)
			if got := netip.AddrPortFrom(ip.Unmap(), uint16(xa.Port)); got.String() != tc.client {
				t.Errorf("XOR-MAPPED-ADDRESS %v, want %v", got, tc.client)
			}
		})
	}
}

// TestBindingAlwaysCountsAsUnauthenticated: a Binding is answered without
// credentials, so even a signed one spends the client's unauthenticated
// tokens, and past them it is dropped.
func TestBindingAlwaysCountsAsUnauthenticated(t *testing.T) {
	e := newEnv(t, func(p *turn.Policy) { p.UnauthenticatedRate = 1 }) // burst 2
	c, l := udpClient(1)
	pkt := e.build(t, stun.MethodBinding, aliceUser())
	answered := 0
	for range 4 {
		answered += len(e.serve(t, c, l, pkt))
	}
	if answered != 2 {
		t.Fatalf("%d of 4 signed Bindings answered, want the burst of 2", answered)
	}
	if got := e.events.drops(); !slices.Equal(got, []string{"rate_limited", "rate_limited"}) {
		t.Errorf("drops %q, want two rate_limited", got)
	}
}
