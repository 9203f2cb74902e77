package turn_test

import (
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/pion/stun/v4"

	"github.com/turnd/turnd/internal/bindings"
	"github.com/turnd/turnd/pkg/allocation"
	"github.com/turnd/turnd/pkg/turn"
)

// TestAllocateSteps holds Allocate to RFC 8656 §7.2 (and RFC 6062 §5.1)
// step by step, on a real table and a fake relay: each row's answer code
// and phrase, that it is signed with the client's key, and what the relay
// and the table were asked.
func TestAllocateSteps(t *testing.T) {
	key := aliceUser().key
	tcpTransport := rawAttr(stun.AttrRequestedTransport, 6, 0, 0, 0)
	for _, tc := range []struct {
		name   string
		policy func(*turn.Policy)
		run    func(t *testing.T, e *env) *stun.Message // the answer under test
		code   int
		check  func(t *testing.T, e *env, resp *stun.Message)
	}{
		{name: "success: relayed IPv4 address, default lifetime, mapped address",
			run: func(t *testing.T, e *env) *stun.Message {
				c, _ := udpClient(1)
				return e.do(t, c, e.build(t, stun.MethodAllocate, aliceUser(), transportUDP()))
			},
			check: func(t *testing.T, e *env, resp *stun.Message) {
				if got := relayedOf(t, resp); !slices.Equal(got, []netip.AddrPort{netip.AddrPortFrom(relay4, 50000)}) {
					t.Errorf("relayed %v", got)
				}
				if got := lifetimeOf(t, resp); got != 10*time.Minute {
					t.Errorf("LIFETIME %v, want the default", got)
				}
				want := []stun.AttrType{stun.AttrXORRelayedAddress, stun.AttrLifetime, stun.AttrXORMappedAddress, stun.AttrMessageIntegrity, stun.AttrFingerprint}
				if got := attrTypes(resp); !slices.Equal(got, want) {
					t.Errorf("attributes %v, want %v", got, want)
				}
				if e.table.Count() != 1 || len(e.events.created) != 1 || e.events.created[0].User != alice {
					t.Errorf("table holds %d, %d created events", e.table.Count(), len(e.events.created))
				}
				if w := e.relays.opened[0]; w != (bindings.Want{Families: bindings.V4, User: alice}) {
					t.Errorf("relay asked %+v", w)
				}
			}},
		{name: "LIFETIME of exactly the maximum: granted exactly",
			run: func(t *testing.T, e *env) *stun.Message { return e.allocate(t, client(1), lifetime(time.Hour)) },
			check: func(t *testing.T, e *env, resp *stun.Message) {
				c, _ := udpClient(1)
				a, _ := e.table.Get(c.Tuple)
				if got := lifetimeOf(t, resp); got != time.Hour || a.Expires(bindings.V4) != t0.Add(time.Hour) {
					t.Errorf("LIFETIME %v, expires %v; want an hour", got, a.Expires(bindings.V4))
				}
			}},
		{name: "LIFETIME above the maximum: the maximum",
			run: func(t *testing.T, e *env) *stun.Message { return e.allocate(t, client(1), lifetime(2*time.Hour)) },
			check: func(t *testing.T, _ *env, resp *stun.Message) {
				if got := lifetimeOf(t, resp); got != time.Hour {
					t.Errorf("LIFETIME %v, want an hour", got)
				}
			}},
		{name: "step 2: a second Allocate on the 5-tuple: 437", code: 437,
			run: func(t *testing.T, e *env) *stun.Message {
				e.allocate(t, client(1))
				return e.do(t, client(1), e.build(t, stun.MethodAllocate, aliceUser(), transportUDP()))
			}},
		{name: "step 2: a retransmission: the same success",
			run: func(t *testing.T, e *env) *stun.Message {
				pkt := e.build(t, stun.MethodAllocate, aliceUser(), transportUDP(), rawAttr(stun.AttrEvenPort, 0))
				first := e.do(t, client(1), pkt)
				e.clock.Advance(300 * time.Millisecond)
				again := e.do(t, client(1), pkt)
				for _, at := range []stun.AttrType{stun.AttrXORRelayedAddress, stun.AttrLifetime, stun.AttrXORMappedAddress} {
					a, _ := first.Get(at)
					b, _ := again.Get(at)
					if string(a) != string(b) {
						t.Errorf("%v: %x, then %x", at, a, b)
					}
				}
				if len(e.relays.opened) != 1 {
					t.Errorf("relay opened %d times", len(e.relays.opened))
				}
				return again
			}},
		{name: "step 8: not admitting, with alternates: 300 signed", code: 300,
			policy: func(p *turn.Policy) {
				p.Alternates = func() []netip.AddrPort { return []netip.AddrPort{netip.MustParseAddrPort("127.0.0.9:3478")} }
			},
			run: func(t *testing.T, e *env) *stun.Message {
				e.table.StopAdmitting()
				return e.do(t, client(1), e.build(t, stun.MethodAllocate, aliceUser(), transportUDP()))
			},
			check: func(t *testing.T, e *env, resp *stun.Message) {
				var alt stun.AlternateServer
				if err := alt.GetFrom(resp); err != nil || !alt.IP.Equal(netip.MustParseAddr("127.0.0.9").AsSlice()) || alt.Port != 3478 {
					t.Errorf("ALTERNATE-SERVER %v (%v)", alt, err)
				}
				if !slices.Equal(e.events.refusals(), []string{"Allocate redirected alice"}) {
					t.Errorf("refusals %q", e.events.refusals())
				}
			}},
		{name: "step 8 comes before step 3: 300 for a request without REQUESTED-TRANSPORT", code: 300,
			policy: func(p *turn.Policy) {
				p.Alternates = func() []netip.AddrPort { return []netip.AddrPort{netip.MustParseAddrPort("127.0.0.9:3478")} }
			},
			run: func(t *testing.T, e *env) *stun.Message {
				e.table.StopAdmitting()
				return e.do(t, client(1), e.build(t, stun.MethodAllocate, aliceUser()))
			}},
		{name: "not admitting, no alternates: 486", code: 486,
			run: func(t *testing.T, e *env) *stun.Message {
				e.table.StopAdmitting()
				return e.do(t, client(1), e.build(t, stun.MethodAllocate, aliceUser(), transportUDP()))
			}},
		{name: "step 3: no REQUESTED-TRANSPORT: 400", code: 400,
			run: func(t *testing.T, e *env) *stun.Message {
				return e.do(t, client(1), e.build(t, stun.MethodAllocate, aliceUser()))
			}},
		{name: "step 3: SCTP: 442", code: 442,
			run: func(t *testing.T, e *env) *stun.Message {
				return e.do(t, client(1), e.build(t, stun.MethodAllocate, aliceUser(), rawAttr(stun.AttrRequestedTransport, 132, 0, 0, 0)))
			}},
		{name: "step 3: TCP with TCP relays off: 442", code: 442,
			policy: func(p *turn.Policy) { p.TCPAllocations = false },
			run: func(t *testing.T, e *env) *stun.Message {
				c, _ := tcpClient(1)
				return e.do(t, c, e.build(t, stun.MethodAllocate, aliceUser(), tcpTransport))
			},
			check: func(t *testing.T, e *env, _ *stun.Message) {
				if !slices.Equal(e.events.refusals(), []string{"Allocate tcp_disabled alice"}) {
					t.Errorf("refusals %q", e.events.refusals())
				}
			}},
		{name: "RFC 6062 §5.1: TCP over UDP: 400", code: 400,
			run: func(t *testing.T, e *env) *stun.Message {
				return e.do(t, client(1), e.build(t, stun.MethodAllocate, aliceUser(), tcpTransport))
			}},
		{name: "RFC 6062: a TCP relay over TCP, the connection no longer idle",
			run: func(t *testing.T, e *env) *stun.Message {
				c, s := tcpClient(1)
				resp := e.do(t, c, e.build(t, stun.MethodAllocate, aliceUser(), tcpTransport))
				if !slices.Equal(s.idle, []bool{false}) || !e.relays.opened[0].TCP {
					t.Errorf("Idle calls %v, relay asked %+v", s.idle, e.relays.opened[0])
				}
				a, _ := e.table.Get(c.Tuple)
				if a == nil || !a.PeerTCP || a.Transport != allocation.TCP {
					t.Errorf("allocation %+v", a)
				}
				return resp
			}},
		{name: "step 4: DONT-FRAGMENT is honoured",
			run: func(t *testing.T, e *env) *stun.Message {
				resp := e.allocate(t, client(1), rawAttr(stun.AttrDontFragment))
				if a, _ := e.table.Get(client(1).Tuple); !e.relays.opened[0].DontFragment || !a.DontFragment {
					t.Error("DF not asked of the relay")
				}
				return resp
			}},
		{name: "step 6: EVEN-PORT R=0: an even port, no token",
			run: func(t *testing.T, e *env) *stun.Message {
				resp := e.allocate(t, client(1), rawAttr(stun.AttrEvenPort, 0))
				if w := e.relays.opened[0]; !w.Even || w.Reserve || resp.Contains(stun.AttrReservationToken) {
					t.Errorf("relay asked %+v, token %v", w, resp.Contains(stun.AttrReservationToken))
				}
				return resp
			}},
		{name: "steps 5 and 6: EVEN-PORT R=1 reserves, the token gets the held port",
			run: func(t *testing.T, e *env) *stun.Message {
				first := e.allocate(t, client(1), rawAttr(stun.AttrEvenPort, 0x80))
				token, err := first.Get(stun.AttrReservationToken)
				if err != nil || len(token) != 8 || !e.relays.opened[0].Reserve {
					t.Fatalf("no token (%v), relay asked %+v", err, e.relays.opened[0])
				}
				resp := e.allocate(t, client(2), rawAttr(stun.AttrReservationToken, token...))
				if got := relayedOf(t, resp); len(got) != 1 || got[0].Port() != 50001 || e.relays.opened[1].Port != 50001 {
					t.Errorf("relayed %v, relay asked %+v", got, e.relays.opened[1])
				}
				if again := e.do(t, client(3), e.build(t, stun.MethodAllocate, aliceUser(), transportUDP(), rawAttr(stun.AttrReservationToken, token...))); !isCode(again, 508) {
					t.Error("a token was redeemed twice")
				}
				return resp
			}},
		{name: "a redeemed token refused later (quota): 486, its port given back", code: 486,
			run: func(t *testing.T, e *env) *stun.Message {
				token, _ := e.allocate(t, client(1), rawAttr(stun.AttrEvenPort, 0x80)).Get(stun.AttrReservationToken)
				e.table.SetLimits(allocation.Limits{PerUser: 1})
				resp := e.do(t, client(2), e.build(t, stun.MethodAllocate, aliceUser(), transportUDP(), rawAttr(stun.AttrReservationToken, token...)))
				if !slices.Equal(e.relays.unheld, []int{50001}) {
					t.Errorf("unheld %v, want the token's port", e.relays.unheld)
				}
				return resp
			}},
		{name: "step 5: an unknown token: 508", code: 508,
			run: func(t *testing.T, e *env) *stun.Message {
				return e.do(t, client(1), e.build(t, stun.MethodAllocate, aliceUser(), transportUDP(), rawAttr(stun.AttrReservationToken, []byte("12345678")...)))
			}},
		{name: "step 7: reservations past the user's cap: 486", code: 486,
			run: func(t *testing.T, e *env) *stun.Message {
				for i := range allocation.MaxReservationsPerUser {
					e.allocate(t, client(byte(10+i)), rawAttr(stun.AttrEvenPort, 0x80))
				}
				return e.do(t, client(1), e.build(t, stun.MethodAllocate, aliceUser(), transportUDP(), rawAttr(stun.AttrEvenPort, 0x80)))
			}},
		{name: "family: IPv6 asked, none served: 440", code: 440, policy: func(p *turn.Policy) { p.Families = bindings.V4 },
			run: func(t *testing.T, e *env) *stun.Message {
				return e.do(t, client(1), e.build(t, stun.MethodAllocate, aliceUser(), transportUDP(), rawAttr(stun.AttrRequestedAddressFamily, 2, 0, 0, 0)))
			}},
		{name: "family: IPv6 asked", run: func(t *testing.T, e *env) *stun.Message {
			resp := e.allocate(t, client(1), rawAttr(stun.AttrRequestedAddressFamily, 2, 0, 0, 0))
			if got := relayedOf(t, resp); len(got) != 1 || got[0].Addr() != relay6 {
				t.Errorf("relayed %v", got)
			}
			return resp
		}},
		{name: "total_bps spent: 486", code: 486, policy: func(p *turn.Policy) { p.OverCapacity = func() bool { return true } },
			run: func(t *testing.T, e *env) *stun.Message {
				return e.do(t, client(1), e.build(t, stun.MethodAllocate, aliceUser(), transportUDP()))
			}},
		{name: "step 7: the table's quota: 486, the ticket counted once", code: 486,
			run: func(t *testing.T, e *env) *stun.Message {
				e.table.SetLimits(allocation.Limits{PerUser: 1})
				e.allocate(t, client(1))
				resp := e.do(t, client(2), e.build(t, stun.MethodAllocate, aliceUser(), transportUDP()))
				if e.table.Count() != 1 {
					t.Errorf("table counts %d", e.table.Count())
				}
				return resp
			}},
		{name: "no relay port: 508, the ticket given back", code: 508,
			run: func(t *testing.T, e *env) *stun.Message {
				e.relays.fail = bindings.ErrNoPort
				resp := e.do(t, client(1), e.build(t, stun.MethodAllocate, aliceUser(), transportUDP()))
				if e.table.Count() != 0 {
					t.Errorf("table counts %d after the refusal", e.table.Count())
				}
				return resp
			}},
		{name: "no relay address of the family: 440", code: 440,
			run: func(t *testing.T, e *env) *stun.Message {
				e.relays.refuse[0] = bindings.ErrNoFamily
				return e.do(t, client(1), e.build(t, stun.MethodAllocate, aliceUser(), transportUDP()))
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, func(p *turn.Policy) {
				if tc.policy != nil {
					tc.policy(p)
				}
			})
			resp := tc.run(t, e)
			if code, _ := codeOf(resp); code != tc.code {
				t.Fatalf("answered %d, want %d", code, tc.code)
			}
			if !signedWith(resp, key) {
				t.Error("answer not signed with the client's key")
			}
			if tc.check != nil {
				tc.check(t, e, resp)
			}
		})
	}
}

// client is the UDP client of the given last octet.
func client(octet byte) *bindings.Client {
	c, _ := udpClient(octet)
	return c
}

// isCode reports whether m answers with code.
func isCode(m *stun.Message, code int) bool {
	got, _ := codeOf(m)
	return got == code
}
