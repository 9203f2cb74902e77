package server_test

import (
	"net"
	"slices"
	"testing"
	"time"

	"github.com/pion/stun/v4"

	"github.com/turnd/turnd/internal/testturn"
	"github.com/turnd/turnd/pkg/config"
	"github.com/turnd/turnd/pkg/server"
)

// ADDITIONAL-ADDRESS-FAMILY and ADDRESS-ERROR-CODE in RFC 8656's numbering
// (§18.11, §18.12) and in coturn 4.6.1's, which turnutils_uclient -Z sends.
const (
	attrAdditionalFamily    stun.AttrType = 0x8000
	attrAddressError        stun.AttrType = 0x8001
	attrAdditionalFamilyOld stun.AttrType = 0x8032
	attrAddressErrorOld     stun.AttrType = 0x8033
)

// dualStack is a relay.address with an IPv4 and an IPv6 loopback address.
const dualStack = "127.0.0.1,::1"

// decided is a conformance row of a point docs/control-plane.md section 3
// decides: a rule run on a server configured for it.
type decided struct {
	rule
	setup func(*config.Config) // changes conformanceConfig for the row
	over  string               // the server's listen host; "" is testConfig's 127.0.0.1
}

// TestConformanceDecided holds the RFC points pion imposed and turnd
// decides (docs/control-plane.md section 3) end to end, each row over each
// client transport it applies to, against a fresh server.
func TestConformanceDecided(t *testing.T) {
	for _, r := range decidedRules() {
		for _, network := range r.nets {
			t.Run(r.section+" "+r.name+" "+network, func(t *testing.T) {
				cfg := conformanceConfig()
				if r.over != "" {
					cfg.Listen.UDP = []string{net.JoinHostPort(r.over, "0")}
					cfg.Listen.TCP = []string{net.JoinHostPort(r.over, "0")}
				}
				if r.setup != nil {
					r.setup(&cfg)
				}
				s := start(t, server.Options{Config: cfg})
				e := &ruleEnv{s: s, net: network, c: dial(t, s, network), peer: echoPeer(t)}
				resp := r.send(t, e)
				if resp == nil {
					t.Fatalf("no answer, want code %d", r.want)
				}
				if got := testturn.ErrorCode(resp); got != r.want {
					t.Fatalf("code %d, want %d", got, r.want)
				}
				if r.check != nil {
					r.check(t, e, resp)
				}
			})
		}
	}
}

// relayAddress sets relay.address.
func relayAddress(a string) func(*config.Config) {
	return func(c *config.Config) { c.Relay.Address = a }
}

// additional is ADDITIONAL-ADDRESS-FAMILY of type typ with family f (1 IPv4, 2 IPv6).
func additional(typ stun.AttrType, f byte) stun.Setter {
	return testturn.RawAttr(typ, []byte{f, 0, 0, 0})
}

// decidedRules is the table TestConformanceDecided runs.
func decidedRules() []decided {
	return []decided{
		// Default family (RFC 8656 §7.2): pion gave the family of the
		// server address the client reached, IPv6 here.
		{setup: relayAddress(dualStack), over: "::1", rule: rule{
			section: "RFC 8656 §7.2", name: "no REQUESTED-ADDRESS-FAMILY on a dual-stack server reached over IPv6: IPv4", nets: both,
			send: func(_ *testing.T, e *ruleEnv) *stun.Message {
				return e.c.Ask(stun.MethodAllocate, testturn.UDPTransport)
			},
			want: 0, check: relayedAre("127.0.0.1")}},

		// Longest lifetime: pion granted one second less than an hour.
		{setup: func(c *config.Config) { c.Limits.MaxLifetime = time.Hour }, rule: rule{
			section: "RFC 8656 §7.2", name: "LIFETIME 3600 with max_lifetime 1h: exactly 3600", nets: both,
			send: func(_ *testing.T, e *ruleEnv) *stun.Message {
				return e.c.Ask(stun.MethodAllocate, testturn.UDPTransport, testturn.Lifetime(time.Hour))
			},
			want: 0, check: lifetimeIs(time.Hour)}},
		{setup: func(c *config.Config) { c.Limits.MaxLifetime = time.Hour }, rule: rule{
			section: "RFC 8656 §8.2", name: "Refresh LIFETIME 3600 with max_lifetime 1h: exactly 3600", nets: both,
			send: func(t *testing.T, e *ruleEnv) *stun.Message {
				e.allocate(t, false)
				return e.c.Ask(stun.MethodRefresh, testturn.Lifetime(time.Hour))
			},
			want: 0, check: lifetimeIs(time.Hour)}},

		// Dual allocations (RFC 8656 §7.2): pion ignored the attribute.
		{setup: relayAddress(dualStack), rule: rule{
			section: "RFC 8656 §7.2", name: "ADDITIONAL-ADDRESS-FAMILY IPv6: both families, IPv4 first, relaying to each", nets: both,
			send: func(_ *testing.T, e *ruleEnv) *stun.Message {
				return e.c.Ask(stun.MethodAllocate, testturn.UDPTransport, additional(attrAdditionalFamily, 2))
			},
			want: 0, check: dualRelays}},
		{setup: relayAddress(dualStack), rule: rule{
			section: "coturn 4.6.1", name: "ADDITIONAL-ADDRESS-FAMILY 0x8032 IPv6: both families, IPv4 first, relaying to each", nets: both,
			send: func(_ *testing.T, e *ruleEnv) *stun.Message {
				return e.c.Ask(stun.MethodAllocate, testturn.UDPTransport, additional(attrAdditionalFamilyOld, 2))
			},
			want: 0, check: dualRelays}},
		{setup: relayAddress("127.0.0.1"), rule: rule{
			section: "RFC 8656 §7.2", name: "ADDITIONAL-ADDRESS-FAMILY without an IPv6 relay address: IPv4 and ADDRESS-ERROR-CODE 440", nets: both,
			send: func(_ *testing.T, e *ruleEnv) *stun.Message {
				return e.c.Ask(stun.MethodAllocate, testturn.UDPTransport, additional(attrAdditionalFamily, 2))
			},
			want: 0, check: ipv4With(attrAddressError)}},
		{setup: relayAddress("127.0.0.1"), rule: rule{
			section: "coturn 4.6.1", name: "0x8032 without an IPv6 relay address: IPv4 and 0x8033 440", nets: both,
			send: func(_ *testing.T, e *ruleEnv) *stun.Message {
				return e.c.Ask(stun.MethodAllocate, testturn.UDPTransport, additional(attrAdditionalFamilyOld, 2))
			},
			want: 0, check: ipv4With(attrAddressErrorOld)}},
		{setup: relayAddress(dualStack), rule: rule{
			section: "RFC 8656 §7.2", name: "ADDITIONAL-ADDRESS-FAMILY with REQUESTED-ADDRESS-FAMILY: 400", nets: both,
			send: func(_ *testing.T, e *ruleEnv) *stun.Message {
				return e.c.Ask(stun.MethodAllocate, testturn.UDPTransport, additional(attrAdditionalFamily, 2), family(1))
			},
			want: 400}},
		{setup: relayAddress(dualStack), rule: rule{
			section: "RFC 8656 §7.2", name: "ADDITIONAL-ADDRESS-FAMILY IPv4: 400", nets: both,
			send: func(_ *testing.T, e *ruleEnv) *stun.Message {
				return e.c.Ask(stun.MethodAllocate, testturn.UDPTransport, additional(attrAdditionalFamily, 1))
			},
			want: 400}},
		{setup: relayAddress(dualStack), rule: rule{
			section: "RFC 8656 §7.2", name: "ADDITIONAL-ADDRESS-FAMILY with a valid RESERVATION-TOKEN: 400", nets: both,
			send: func(t *testing.T, e *ruleEnv) *stun.Message {
				token := e.reservationToken(t)
				return dial(t, e.s, e.net).Ask(stun.MethodAllocate, testturn.UDPTransport, token, additional(attrAdditionalFamily, 2))
			},
			want: 400}},
		{setup: relayAddress(dualStack), rule: rule{
			section: "RFC 8656 §8.2", name: "Refresh with REQUESTED-ADDRESS-FAMILY the allocation lacks: 443", nets: both,
			send: func(t *testing.T, e *ruleEnv) *stun.Message {
				e.allocate(t, false)
				return e.c.Ask(stun.MethodRefresh, testturn.Lifetime(10*time.Minute), family(2))
			},
			want: 443}},

		{setup: relayAddress(dualStack), rule: rule{
			section: "RFC 8656 §8.2", name: "Refresh LIFETIME 0 of IPv6 in a dual allocation: that family alone deleted", nets: both,
			send: func(t *testing.T, e *ruleEnv) *stun.Message {
				if resp := e.c.Ask(stun.MethodAllocate, testturn.UDPTransport, additional(attrAdditionalFamily, 2)); len(relayedAll(t, resp)) != 2 {
					t.Fatalf("dual Allocate: code %d, %d relayed addresses, want 2", testturn.ErrorCode(resp), len(relayedAll(t, resp)))
				}
				return e.c.Ask(stun.MethodRefresh, testturn.Lifetime(0), family(2))
			},
			want: 0, check: func(t *testing.T, e *ruleEnv, _ *stun.Message) {
				if code := testturn.ErrorCode(e.c.Ask(stun.MethodRefresh, testturn.Lifetime(10*time.Minute), family(2))); code != 443 {
					t.Errorf("Refresh of the deleted IPv6 family: %d, want 443", code)
				}
				mustPermit(t, e.c, e.peer)
				mustEcho(t, e.c, e.peer, "ipv4 family kept over "+e.net)
			}}},

		// MESSAGE-INTEGRITY-SHA256 (RFC 8489 §9.2): not offered, for
		// turnd's reasons, so a request signed with it alone is unsigned.
		{rule: rule{
			section: "RFC 8489 §9.2", name: "MESSAGE-INTEGRITY-SHA256 alone: 401 with REALM and NONCE, no PASSWORD-ALGORITHMS", nets: both,
			send: sha256Only,
			want: 401, check: func(t *testing.T, e *ruleEnv, resp *stun.Message) {
				realmAndNonce(t, e, resp)
				if resp.Contains(stun.AttrPasswordAlgorithms) || resp.Contains(stun.AttrMessageIntegrity) {
					t.Errorf("401 %v: offers PASSWORD-ALGORITHMS or is signed", attrsOf(resp))
				}
			}}},
	}
}

// sha256Only sends an Allocate carrying USERNAME, REALM, a nonce turnd
// issued and MESSAGE-INTEGRITY-SHA256, without MESSAGE-INTEGRITY.
func sha256Only(t *testing.T, e *ruleEnv) *stun.Message {
	t.Helper()
	first := e.c.Answer(e.c.Build(stun.MethodAllocate, testturn.UDPTransport))
	var nonce stun.Nonce
	var realm stun.Realm
	if first == nil || nonce.GetFrom(first) != nil || realm.GetFrom(first) != nil {
		t.Fatal("unsigned Allocate: no 401 with REALM and NONCE")
	}
	req, err := stun.Build(stun.TransactionID, stun.NewType(stun.MethodAllocate, stun.ClassRequest), testturn.UDPTransport,
		stun.NewUsername("demo"), realm, nonce,
		stun.RawAttribute{Type: stun.AttrMessageIntegritySHA256, Length: 32, Value: make([]byte, 32)}, stun.Fingerprint)
	if err != nil {
		t.Fatal(err)
	}
	return e.c.Answer(req)
}

// relayedAll returns every XOR-RELAYED-ADDRESS of a response, in order.
func relayedAll(t *testing.T, m *stun.Message) []*net.UDPAddr {
	t.Helper()
	var out []*net.UDPAddr
	for _, a := range m.Attributes {
		if a.Type != stun.AttrXORRelayedAddress {
			continue
		}
		// XOR-RELAYED-ADDRESS is decoded against the transaction ID, so
		// each one is read from a message holding it alone.
		one := &stun.Message{TransactionID: m.TransactionID}
		one.WriteHeader()
		one.Add(a.Type, a.Value)
		var x stun.XORMappedAddress
		if err := x.GetFromAs(one, stun.AttrXORRelayedAddress); err != nil {
			t.Fatalf("XOR-RELAYED-ADDRESS %x: %v", a.Value, err)
		}
		out = append(out, &net.UDPAddr{IP: x.IP, Port: x.Port})
	}
	return out
}

// relayedAre checks that a success's relayed addresses have the IPs ips, in order.
func relayedAre(ips ...string) func(*testing.T, *ruleEnv, *stun.Message) {
	return func(t *testing.T, _ *ruleEnv, resp *stun.Message) {
		t.Helper()
		var got []string
		for _, a := range relayedAll(t, resp) {
			got = append(got, a.IP.String())
		}
		if !slices.Equal(got, ips) {
			t.Errorf("relayed addresses %q, want %q", got, ips)
		}
	}
}

// dualRelays checks a dual allocation: an IPv4 relayed address then an
// IPv6 one, no ADDRESS-ERROR-CODE, and data relayed to a peer of each
// family through the one allocation.
func dualRelays(t *testing.T, e *ruleEnv, resp *stun.Message) {
	t.Helper()
	relayedAre("127.0.0.1", "::1")(t, e, resp)
	if resp.Contains(attrAddressError) || resp.Contains(attrAddressErrorOld) {
		t.Errorf("ADDRESS-ERROR-CODE in a success of both families: %v", attrsOf(resp))
	}
	if t.Failed() {
		return
	}
	peer6 := echoPeerOn(t, "[::1]:0")
	mustPermit(t, e.c, e.peer)
	mustPermit(t, e.c, peer6)
	mustEcho(t, e.c, e.peer, "dual allocation, ipv4 peer over "+e.net)
	mustEcho(t, e.c, peer6, "dual allocation, ipv6 peer over "+e.net)
}

// ipv4With checks a dual allocation of which only IPv4 could be had: the
// IPv4 relayed address alone and one ADDRESS-ERROR-CODE of type typ
// naming IPv6 and 440 (RFC 8656 §18.12: family, reserved, class, number).
func ipv4With(typ stun.AttrType) func(*testing.T, *ruleEnv, *stun.Message) {
	return func(t *testing.T, e *ruleEnv, resp *stun.Message) {
		t.Helper()
		relayedAre("127.0.0.1")(t, e, resp)
		var errs [][]byte
		for _, a := range resp.Attributes {
			if a.Type == attrAddressError || a.Type == attrAddressErrorOld {
				if a.Type != typ {
					t.Errorf("ADDRESS-ERROR-CODE of type %v, want %v", a.Type, typ)
				}
				errs = append(errs, a.Value)
			}
		}
		if len(errs) != 1 || len(errs[0]) < 4 || errs[0][0] != 2 || int(errs[0][2]&7)*100+int(errs[0][3]) != 440 {
			t.Errorf("ADDRESS-ERROR-CODE values %x, want one of IPv6 (2) and 440", errs)
		}
	}
}

// attrsOf lists a message's attribute types, for failure messages.
func attrsOf(m *stun.Message) []stun.AttrType {
	var out []stun.AttrType
	for _, a := range m.Attributes {
		out = append(out, a.Type)
	}
	return out
}
