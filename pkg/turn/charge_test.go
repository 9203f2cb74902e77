package turn_test

import (
	"encoding/binary"
	"slices"
	"testing"

	"github.com/pion/stun/v4"

	"github.com/turnd/turnd/pkg/turn"
)

// maxAmplification is README's bound on what an unauthenticated request
// can make turnd send, as a multiple of its size (test/e2e TestAmplification).
const maxAmplification = 4

// methodUnknown is a method no TURN or STUN RFC defines.
const methodUnknown stun.Method = 0x050

// TestFirstLegStaysSmall: the answers to the smallest requests anyone can
// send from a spoofed address stay within the amplification bound: the 401
// to a bare 20-byte Allocate carries no reason phrase and no FINGERPRINT,
// and nothing is answered with more than 4 times its request.
func TestFirstLegStaysSmall(t *testing.T) {
	e := newEnv(t)
	for _, tc := range []struct {
		name string
		pkt  []byte
		code int
	}{
		{"Allocate, header only", raw(t, stun.TransactionID, stun.NewType(stun.MethodAllocate, stun.ClassRequest)), 401},
		{"Refresh, header only", raw(t, stun.TransactionID, stun.NewType(stun.MethodRefresh, stun.ClassRequest)), 401},
		{"Allocate with REQUESTED-TRANSPORT", raw(t, stun.TransactionID, stun.NewType(stun.MethodAllocate, stun.ClassRequest), transportUDP()), 401},
		{"Binding, header only", raw(t, stun.TransactionID, stun.BindingRequest), 0},
		{"Binding with an unknown attribute", raw(t, stun.TransactionID, stun.BindingRequest, stun.RawAttribute{Type: 0x7F01}), 420},
		{"unknown method, header only", raw(t, stun.TransactionID, stun.NewType(methodUnknown, stun.ClassRequest)), 400},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, l := udpClient(1)
			e.h.Serve(tc.pkt, c)
			got := l.take()
			if len(got) != 1 {
				t.Fatalf("%d answers, want 1", len(got))
			}
			m := &stun.Message{Raw: got[0]}
			if err := m.Decode(); err != nil {
				t.Fatal(err)
			}
			if code, _ := codeOf(m); code != tc.code {
				t.Fatalf("answered %d, want %d", code, tc.code)
			}
			factor := float64(len(got[0])) / float64(len(tc.pkt))
			t.Logf("request %d B, answer %d B: %.2f", len(tc.pkt), len(got[0]), factor)
			if factor > maxAmplification || m.Contains(stun.AttrFingerprint) || m.Contains(stun.AttrSoftware) {
				t.Errorf("answer of %d B to %d B (%v)", len(got[0]), len(tc.pkt), attrTypes(m))
			}
			// ERROR-CODE 8, NONCE 28 (22 characters), REALM 16: today's 72 bytes.
			if tc.code == 401 && len(got[0]) != 72 {
				t.Errorf("401 of %d B, want 72", len(got[0]))
			}
		})
	}
}

// TestUnverifiedRequestsAreCharged: every request whose MESSAGE-INTEGRITY
// the handler cannot verify spends a token of its client's rate limit,
// whatever it carries; past the burst it is dropped unanswered. A request
// signed with the right key is never limited, even from a client whose
// tokens are spent.
func TestUnverifiedRequestsAreCharged(t *testing.T) {
	e := newEnv(t, func(p *turn.Policy) { p.UnauthenticatedRate = 5 }) // burst 10
	junk := stun.MessageIntegrity([]byte("junk"))
	for i, tc := range []struct {
		name string
		pkt  func() []byte
	}{
		{"no MESSAGE-INTEGRITY", func() []byte { return e.build(t, stun.MethodAllocate, user{}, transportUDP()) }},
		{"MESSAGE-INTEGRITY-SHA256 only", func() []byte {
			return raw(t, stun.TransactionID, stun.NewType(stun.MethodAllocate, stun.ClassRequest), stun.NewUsername(alice),
				stun.NewRealm(realm), stun.NewNonce(e.nonces.Issue(t0)),
				stun.RawAttribute{Type: stun.AttrMessageIntegritySHA256, Value: make([]byte, 32)}, stun.Fingerprint)
		}},
		{"junk MESSAGE-INTEGRITY", func() []byte { return e.build(t, stun.MethodAllocate, user{alice, []byte("junk")}) }},
		{"junk MESSAGE-INTEGRITY without NONCE", func() []byte {
			return raw(t, stun.TransactionID, stun.NewType(stun.MethodAllocate, stun.ClassRequest), stun.NewUsername(alice),
				stun.NewRealm(realm), junk, stun.Fingerprint)
		}},
		{"bogus NONCE", func() []byte {
			return raw(t, stun.TransactionID, stun.NewType(stun.MethodRefresh, stun.ClassRequest), stun.NewUsername(alice),
				stun.NewRealm(realm), stun.NewNonce("bogus"), junk, stun.Fingerprint)
		}},
		{"no USERNAME", func() []byte {
			return raw(t, stun.TransactionID, stun.NewType(stun.MethodRefresh, stun.ClassRequest),
				stun.NewRealm(realm), stun.NewNonce(e.nonces.Issue(t0)), junk, stun.Fingerprint)
		}},
		{"unknown user", func() []byte { return e.build(t, stun.MethodAllocate, user{"mallory", aliceUser().key}) }},
		{"ConnectionBind with junk MESSAGE-INTEGRITY", func() []byte {
			return e.build(t, stun.Method(0x000B), user{alice, []byte("junk")},
				stun.RawAttribute{Type: stun.AttrConnectionID, Value: []byte{0, 0, 0, 1}})
		}},
		{"unknown method", func() []byte { return raw(t, stun.TransactionID, stun.NewType(methodUnknown, stun.ClassRequest)) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, l := udpClient(byte(10 + i)) // a client of its own: a bucket of its own
			pkt := tc.pkt()
			answered := 0
			for range 30 {
				answered += len(e.serve(t, c, l, pkt))
			}
			if answered != 10 {
				t.Fatalf("%d of 30 answered, want the burst of 10", answered)
			}
			resp := e.ask(t, c, l, e.build(t, stun.MethodRefresh, aliceUser()))
			if code, _ := codeOf(resp); code != 437 {
				t.Fatalf("a correctly signed Refresh from the same client: %d, want 437", code)
			}
		})
	}
	if n := len(e.events.drops()); n != 9*20 {
		t.Errorf("%d drops reported, want %d", n, 9*20)
	}
}

// TestBadFingerprintDroppedAndCharged: RFC 8489 §6.3 — a message whose
// FINGERPRINT does not match is not STUN and gets no answer, request or
// Send indication; it is counted and charged to the client's rate limit.
// A matching FINGERPRINT and none at all both pass.
func TestBadFingerprintDroppedAndCharged(t *testing.T) {
	e := newEnv(t, func(p *turn.Policy) { p.UnauthenticatedRate = 1 }) // burst 2
	c, l := udpClient(1)
	signed := e.build(t, stun.MethodRefresh, aliceUser())
	if got := e.serve(t, c, l, signed); len(got) != 1 {
		t.Fatal("a request with a matching FINGERPRINT was not answered")
	}
	corrupt := append([]byte(nil), signed...)
	corrupt[len(corrupt)-1] ^= 0xFF
	send := raw(t, stun.TransactionID, stun.NewType(stun.MethodSend, stun.ClassIndication), stun.Fingerprint)
	send[len(send)-1] ^= 0xFF
	rfc3489 := append([]byte(nil), corrupt...) // no magic cookie: its FINGERPRINT-typed attribute is not one
	binary.BigEndian.PutUint32(rfc3489[4:8], 0x01020304)
	for _, pkt := range [][]byte{corrupt, corrupt, send} {
		if got := e.serve(t, c, l, pkt); len(got) != 0 {
			t.Fatalf("answered a wrong FINGERPRINT: %v", got[0].Type)
		}
	}
	if got := e.events.drops(); !slices.Equal(got, []string{"bad_fingerprint", "bad_fingerprint", "bad_fingerprint"}) {
		t.Fatalf("drops %q, want three bad_fingerprint", got)
	}
	e.serve(t, c, l, rfc3489)
	if got := e.events.drops(); slices.Contains(got[3:], "bad_fingerprint") {
		t.Errorf("an RFC 3489 message was judged by its FINGERPRINT: %q", got[3:])
	}
	binding := raw(t, stun.TransactionID, stun.BindingRequest)
	if got := e.serve(t, c, l, binding); len(got) != 0 {
		t.Fatal("a Binding without FINGERPRINT was answered: the wrong FINGERPRINTs were not charged")
	}
	other, ol := udpClient(9)
	if got := e.serve(t, other, ol, binding); len(got) != 1 {
		t.Fatal("a Binding without FINGERPRINT from another client was not answered")
	}
}
