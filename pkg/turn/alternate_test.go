package turn_test

import (
	"net/netip"
	"slices"
	"testing"

	"github.com/pion/stun/v4"

	"github.com/turnd/turnd/pkg/turn"
)

// alternates is a Policy.Alternates that always offers alts.
func alternates(alts ...string) func() []netip.AddrPort {
	var out []netip.AddrPort
	for _, a := range alts {
		out = append(out, netip.MustParseAddrPort(a))
	}
	return func() []netip.AddrPort { return out }
}

// alternateOf is a 300's ALTERNATE-SERVER, or the zero AddrPort.
func alternateOf(m *stun.Message) netip.AddrPort {
	var alt stun.AlternateServer
	if alt.GetFrom(m) != nil {
		return netip.AddrPort{}
	}
	ip, _ := netip.AddrFromSlice(alt.IP)
	return netip.AddrPortFrom(ip.Unmap(), uint16(alt.Port)) //nolint:gosec
}

// TestDrainingRedirects: while the table does not admit, a signed Allocate
// is answered 300 Try Alternate, signed, rotating through the alternates,
// and reported; over TLS the alternate is named on this connection's port,
// with ALTERNATE-DOMAIN.
func TestDrainingRedirects(t *testing.T) {
	e := newEnv(t, func(p *turn.Policy) {
		p.Alternates = alternates("127.0.0.10:3478", "127.0.0.11:3479")
		p.AlternateDomain = "turn.example.org"
	})
	e.table.StopAdmitting()
	for i, want := range []string{"127.0.0.10:3478", "127.0.0.11:3479", "127.0.0.10:3478"} {
		c, _ := udpClient(1)
		pkt := e.build(t, stun.MethodAllocate, aliceUser(), transportUDP())
		resp := e.do(t, c, pkt)
		code, reason := codeOf(resp)
		if code != 300 || reason != "Try Alternate" || !signedWith(resp, aliceUser().key) {
			t.Fatalf("Allocate %d: %d %q (signed %v), want a signed 300", i, code, reason, signedWith(resp, aliceUser().key))
		}
		if got := alternateOf(resp); got.String() != want || resp.Contains(stun.AttrAlternateDomain) {
			t.Errorf("Allocate %d: ALTERNATE-SERVER %v (ALTERNATE-DOMAIN %v), want %s alone", i, got, resp.Contains(stun.AttrAlternateDomain), want)
		}
	}
	if got := e.events.refusals(); len(got) != 3 || got[0] != "Allocate redirected alice" {
		t.Errorf("refusals %q, want three redirects", got)
	}
	c, _ := tcpClient(1)
	c.TLS, c.Tuple.Server = true, netip.MustParseAddrPort("127.0.0.1:5349")
	resp := e.do(t, c, e.build(t, stun.MethodAllocate, aliceUser(), transportUDP()))
	if domain, err := resp.Get(stun.AttrAlternateDomain); err != nil || string(domain) != "turn.example.org" || alternateOf(resp).Port() != 5349 {
		t.Errorf("over TLS: ALTERNATE-SERVER %v, ALTERNATE-DOMAIN %q (%v); want port 5349 and the domain", alternateOf(resp), domain, err)
	}
}

// TestDrainingRedirectsUnauthenticated: an Allocate without credentials is
// answered 300 on its first leg while the table does not admit, unsigned,
// without NONCE or REALM (the client is challenged at the alternate), with
// FINGERPRINT only if the request had one; charged as unauthenticated.
// Admitting, without alternates, or with none left, it is challenged.
func TestDrainingRedirectsUnauthenticated(t *testing.T) {
	e := newEnv(t, func(p *turn.Policy) {
		p.Alternates = alternates("127.0.0.10:3478", "127.0.0.11:3479")
		p.AlternateDomain = "turn.example.org" // over TLS only: not on UDP
		p.UnauthenticatedRate = 2              // burst 4
	})
	e.table.StopAdmitting()
	for i, want := range []string{"127.0.0.10:3478", "127.0.0.11:3479", "127.0.0.10:3478"} {
		s := []stun.Setter{stun.TransactionID, stun.NewType(stun.MethodAllocate, stun.ClassRequest), transportUDP()}
		if i != 1 {
			s = append(s, stun.Fingerprint)
		}
		c, _ := udpClient(1)
		resp := e.do(t, c, raw(t, s...))
		if code, reason := codeOf(resp); code != 300 || reason != "Try Alternate" || alternateOf(resp).String() != want {
			t.Fatalf("Allocate %d: %d %q to %v, want 300 Try Alternate to %s", i, code, reason, alternateOf(resp), want)
		}
		for _, at := range []stun.AttrType{stun.AttrNonce, stun.AttrRealm, stun.AttrMessageIntegrity, stun.AttrAlternateDomain} {
			if resp.Contains(at) {
				t.Errorf("Allocate %d: carries %v", i, at)
			}
		}
		if resp.Contains(stun.AttrFingerprint) != (i != 1) {
			t.Errorf("Allocate %d: FINGERPRINT %v, want one only if the request had one", i, resp.Contains(stun.AttrFingerprint))
		}
	}
	c, l := udpClient(1)
	bare := raw(t, stun.TransactionID, stun.NewType(stun.MethodAllocate, stun.ClassRequest))
	if got := len(e.serve(t, c, l, bare)) + len(e.serve(t, c, l, bare)); got != 1 {
		t.Errorf("%d of the next two answered, want the burst's last", got)
	}

	for _, tc := range []struct {
		name      string
		admitting bool
		alts      func() []netip.AddrPort
	}{
		{"admitting", true, alternates("127.0.0.10:3478")},
		{"not admitting, no alternates", false, nil},
		{"not admitting, no alternate left", false, func() []netip.AddrPort { return nil }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, func(p *turn.Policy) { p.Alternates = tc.alts })
			if !tc.admitting {
				e.table.StopAdmitting()
			}
			c, _ := udpClient(1)
			if resp := e.do(t, c, e.build(t, stun.MethodAllocate, user{}, transportUDP())); !isCode(resp, 401) {
				t.Errorf("answered %v, want the 401 challenge", resp.Type)
			}
		})
	}
}

// TestAlternateOfTheClientsFamily: a redirect names an alternate of the
// client's family while there is one, rotating among those, and one of the
// other family only when there is none; a loopback alternate is never
// offered to a client not on loopback, which could not reach it (with
// nothing else left, the client is challenged as if none were known).
func TestAlternateOfTheClientsFamily(t *testing.T) {
	const v4a, v4b, v6, lo4, lo6 = "10.0.0.1:3478", "10.0.0.2:3478", "[fd00::1]:3478", "127.0.0.2:3478", "[::1]:3478"
	for _, tc := range []struct {
		name   string
		alts   []string
		client string
		want   []string // successive redirects; nil: challenged
	}{
		{"IPv4 client, mixed list", []string{v6, v4a, v6, v4b}, "198.51.100.7:50000", []string{v4a, v4a, v4b, v4b, v4a}},
		{"IPv4-mapped client is IPv4", []string{v6, v4a}, "[::ffff:198.51.100.7]:50000", []string{v4a, v4a}},
		{"IPv6 client, mixed list", []string{v4a, v6, v4b}, "[2001:db8::7]:50000", []string{v6, v6, v6}},
		{"IPv6 client, IPv4 only", []string{v4a, v4b}, "[2001:db8::7]:50000", []string{v4a, v4b, v4a}},
		{"loopback skipped for a remote client", []string{lo4, v4a, lo6}, "198.51.100.7:50000", []string{v4a, v4a, v4a}},
		{"only loopback, remote client", []string{lo4, lo6}, "198.51.100.7:50000", nil},
		{"loopback offered to a loopback client", []string{lo4, v6}, "127.0.0.1:50000", []string{lo4, lo4}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, func(p *turn.Policy) { p.Alternates = alternates(tc.alts...) })
			e.table.StopAdmitting()
			for i := range max(len(tc.want), 2) {
				c, _ := udpClient(1)
				c.Tuple.Client = netip.MustParseAddrPort(tc.client)
				resp := e.do(t, c, e.build(t, stun.MethodAllocate, user{}, transportUDP()))
				if tc.want == nil {
					if !isCode(resp, 401) {
						t.Fatalf("Allocate %d: answered %v, want the challenge", i, resp.Type)
					}
					continue
				}
				if got := alternateOf(resp); got != netip.MustParseAddrPort(tc.want[i]) {
					t.Errorf("Allocate %d: ALTERNATE-SERVER %v, want %s", i, got, tc.want[i])
				}
			}
		})
	}
}

// TestUserAllocateRate: past a user's burst of authenticated Allocates the
// answer is a signed 486, reported; other users go on; 0 turns the limit
// off. The clock stands still, so no token comes back.
func TestUserAllocateRate(t *testing.T) {
	e := newEnv(t, func(p *turn.Policy) { p.UserAllocateRate = 2 }) // burst 4
	for i := range 4 {
		c, _ := udpClient(byte(10 + i))
		e.allocate(t, c)
	}
	c, _ := udpClient(1)
	resp := e.do(t, c, e.build(t, stun.MethodAllocate, aliceUser(), transportUDP()))
	if code, reason := codeOf(resp); code != 486 || reason != "Allocation Quota Reached" || !signedWith(resp, aliceUser().key) {
		t.Fatalf("past the burst: %d %q, want a signed 486", code, reason)
	}
	if got := e.events.refusals(); !slices.Equal(got, []string{"Allocate rate alice"}) {
		t.Errorf("refusals %q", got)
	}
	other, _ := udpClient(2)
	if resp := e.do(t, other, e.build(t, stun.MethodAllocate, carolUser(), transportUDP())); !isCode(resp, 0) {
		t.Error("another user was limited too")
	}
	p := *e.policy
	p.UserAllocateRate = 0
	e.h.SetPolicy(&p)
	e.allocate(t, c)
}
