package turn_test

import (
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/pion/stun/v4"

	"github.com/turnd/turnd/internal/bindings"
	"github.com/turnd/turnd/pkg/turn"
)

// dual is ADDITIONAL-ADDRESS-FAMILY IPv6, in RFC 8656's numbering or coturn's.
func dual(typ stun.AttrType) stun.Setter { return rawAttr(typ, 2, 0, 0, 0) }

// addressErrors lists a success's ADDRESS-ERROR-CODEs as "type family code".
func addressErrors(m *stun.Message) []string {
	var out []string
	for _, a := range m.Attributes {
		if (a.Type == 0x8001 || a.Type == 0x8033) && len(a.Value) >= 4 {
			out = append(out, a.Type.String()+" "+string('0'+rune(a.Value[0]))+" "+
				string('0'+rune(a.Value[2]))+string('0'+rune(a.Value[3]/10))+string('0'+rune(a.Value[3]%10)))
		}
	}
	return out
}

// TestDualAllocation: RFC 8656 §7.2 with ADDITIONAL-ADDRESS-FAMILY, in both
// numberings, as section 3 of docs/control-plane.md decides it: two relayed
// addresses, IPv4 first; one family missing or refused: the other and
// ADDRESS-ERROR-CODE in the request's numbering; the 400 cases; a TCP relay
// keeps one family; then permissions and channels of either family, and
// Refresh per family (§8.2).
func TestDualAllocation(t *testing.T) {
	for _, tc := range []struct {
		name    string
		policy  func(*turn.Policy)
		refuse  [2]error
		tcp     bool
		extra   []stun.Setter
		code    int
		relayed []netip.Addr
		errs    []string
	}{
		{name: "both families", extra: []stun.Setter{dual(0x8000)}, relayed: []netip.Addr{relay4, relay6}},
		{name: "both families, coturn's numbering", extra: []stun.Setter{dual(0x8032)}, relayed: []netip.Addr{relay4, relay6}},
		{name: "no IPv6 relay address: IPv4 and 440", policy: func(p *turn.Policy) { p.Families = bindings.V4 },
			extra: []stun.Setter{dual(0x8000)}, relayed: []netip.Addr{relay4}, errs: []string{"0x8001 2 440"}},
		{name: "no IPv4 relay address: IPv6 and 440, coturn's numbering", policy: func(p *turn.Policy) { p.Families = bindings.V6 },
			extra: []stun.Setter{dual(0x8032)}, relayed: []netip.Addr{relay6}, errs: []string{"0x8033 1 440"}},
		{name: "no IPv6 port: IPv4 and 508", refuse: [2]error{nil, bindings.ErrNoPort},
			extra: []stun.Setter{dual(0x8032)}, relayed: []netip.Addr{relay4}, errs: []string{"0x8033 2 508"}},
		{name: "no port of either family: 508", refuse: [2]error{bindings.ErrNoPort, bindings.ErrNoPort},
			extra: []stun.Setter{dual(0x8000)}, code: 508},
		{name: "with REQUESTED-ADDRESS-FAMILY: 400", extra: []stun.Setter{dual(0x8000), rawAttr(stun.AttrRequestedAddressFamily, 1, 0, 0, 0)}, code: 400},
		{name: "of IPv4: 400", extra: []stun.Setter{rawAttr(0x8000, 1, 0, 0, 0)}, code: 400},
		{name: "with RESERVATION-TOKEN: 400", extra: []stun.Setter{dual(0x8032), rawAttr(stun.AttrReservationToken, []byte("12345678")...)}, code: 400},
		{name: "a TCP relay: IPv4 and 440", tcp: true, extra: []stun.Setter{dual(0x8000)}, relayed: []netip.Addr{relay4}, errs: []string{"0x8001 2 440"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, func(p *turn.Policy) {
				if tc.policy != nil {
					tc.policy(p)
				}
			})
			e.relays.refuse = tc.refuse
			c, _ := udpClient(1)
			transport := transportUDP()
			if tc.tcp {
				c, _ = tcpClient(1)
				transport = rawAttr(stun.AttrRequestedTransport, 6, 0, 0, 0)
			}
			pkt := e.build(t, stun.MethodAllocate, aliceUser(), append([]stun.Setter{transport}, tc.extra...)...)
			resp := e.do(t, c, pkt)
			if code, _ := codeOf(resp); code != tc.code {
				t.Fatalf("answered %d, want %d", code, tc.code)
			}
			if tc.code != 0 {
				return
			}
			var got []netip.Addr
			for _, a := range relayedOf(t, resp) {
				got = append(got, a.Addr())
			}
			if !slices.Equal(got, tc.relayed) {
				t.Errorf("relayed %v, want %v", got, tc.relayed)
			}
			if got := addressErrors(resp); !slices.Equal(got, tc.errs) {
				t.Errorf("ADDRESS-ERROR-CODE %q, want %q", got, tc.errs)
			}
			if again := e.do(t, c, pkt); !slices.Equal(addressErrors(again), tc.errs) || len(relayedOf(t, again)) != len(tc.relayed) {
				t.Errorf("the retransmission's answer differs: %v", attrTypes(again))
			}
		})
	}

	t.Run("permissions, channels and Refresh per family", func(t *testing.T) {
		e := newEnv(t)
		c, _ := udpClient(1)
		e.allocate(t, c, dual(0x8000))
		ask := func(method stun.Method, s ...stun.Setter) int {
			code, _ := codeOf(e.do(t, c, e.build(t, method, aliceUser(), s...)))
			return code
		}
		if code := ask(stun.MethodCreatePermission, peerAttr("192.0.2.5:9"), peerAttr("[2001:db8::5]:9")); code != 0 {
			t.Fatalf("CreatePermission for both families: %d", code)
		}
		if code := ask(stun.MethodChannelBind, channelAttr(0x4001), peerAttr("[2001:db8::6]:7")); code != 0 {
			t.Fatalf("ChannelBind to an IPv6 peer: %d", code)
		}
		if code := ask(stun.MethodRefresh, lifetime(0), rawAttr(stun.AttrRequestedAddressFamily, 2, 0, 0, 0)); code != 0 {
			t.Fatalf("Refresh deleting IPv6: %d", code)
		}
		a, _ := e.table.Get(c.Tuple)
		if a.Families() != bindings.V4 || !slices.Equal(e.relays.closed, []string{"50000 2"}) {
			t.Fatalf("families %v, relay closed %q: want IPv6 alone closed", a.Families(), e.relays.closed)
		}
		if code := ask(stun.MethodCreatePermission, peerAttr("[2001:db8::5]:9")); code != 443 {
			t.Errorf("CreatePermission for IPv6 after its deletion: %d, want 443", code)
		}
		if code := ask(stun.MethodRefresh, lifetime(time.Minute), rawAttr(stun.AttrRequestedAddressFamily, 2, 0, 0, 0)); code != 443 {
			t.Errorf("Refresh of the deleted family: %d, want 443", code)
		}
		if code := ask(stun.MethodRefresh, lifetime(0)); code != 0 || !slices.Equal(e.events.endings(), []string{"alice released"}) {
			t.Errorf("Refresh(0) of what is left: %d, endings %q", code, e.events.endings())
		}
	})
}
