package gate_test

import (
	"encoding/binary"
	"net"
	"testing"

	"github.com/pion/stun/v4"

	"github.com/turnd/turnd/internal/gate"
)

// TestUnverifiedRequestsAreCharged: every request whose MESSAGE-INTEGRITY
// the gate cannot verify spends a token of its client's rate limit, whatever
// it carries; past the burst it is dropped. A request signed with the right
// key is never limited, even from a client whose tokens are spent.
func TestUnverifiedRequestsAreCharged(t *testing.T) {
	sha256Junk := stun.RawAttribute{Type: stun.AttrMessageIntegritySHA256, Value: make([]byte, 32)}
	variants := []struct {
		name string
		pkt  func(t *testing.T) []byte
	}{
		{"MESSAGE-INTEGRITY-SHA256 only", func(t *testing.T) []byte {
			return request(t, stun.MethodAllocate, testUser, nil, true, transport(17), sha256Junk)
		}},
		{"junk MESSAGE-INTEGRITY", func(t *testing.T) []byte {
			return request(t, stun.MethodAllocate, testUser, []byte("junk"), true, transport(17))
		}},
		{"junk MESSAGE-INTEGRITY without NONCE", func(t *testing.T) []byte {
			m, err := stun.Build(stun.TransactionID, stun.NewType(stun.MethodAllocate, stun.ClassRequest),
				stun.NewUsername(testUser), stun.NewRealm(testRealm), transport(17),
				stun.MessageIntegrity([]byte("junk")), stun.Fingerprint)
			if err != nil {
				t.Fatal(err)
			}
			return m.Raw
		}},
		{"unknown user", func(t *testing.T) []byte {
			return request(t, stun.MethodAllocate, "mallory", aliceKey(), true, transport(17))
		}},
		{"Refresh with junk MESSAGE-INTEGRITY", func(t *testing.T) []byte {
			return request(t, stun.MethodRefresh, testUser, []byte("junk"), true)
		}},
		{"ConnectionBind with junk MESSAGE-INTEGRITY", func(t *testing.T) []byte {
			return request(t, methodConnectionBind, testUser, []byte("junk"), true,
				stun.RawAttribute{Type: stun.AttrConnectionID, Value: []byte{0, 0, 0, 1}})
		}},
		{"malformed after MESSAGE-INTEGRITY", func(t *testing.T) []byte {
			b := request(t, stun.MethodAllocate, testUser, []byte("junk"), false, transport(17))
			binary.BigEndian.PutUint16(b[2:], uint16(len(b)-20+8)) // claims an attribute that is not there
			return append(b, 0, 0x80, 0, 0x10, 0, 0, 0, 0)
		}},
	}
	for _, tt := range variants {
		t.Run(tt.name, func(t *testing.T) {
			p := strictPolicy()
			p.UnauthenticatedRate = 5 // burst 10
			dropped := 0
			g := gate.New(p, gate.Hooks{RateLimited: func(net.Addr) { dropped++ }})
			r := &responder{}
			pkt := tt.pkt(t)
			passed := 0
			for i := 0; i < 30; i++ {
				if _, v := g.Inspect(pkt, clientAddr(), localAddr(), r); v != gate.Answered {
					passed++
				}
			}
			if passed > 10 || dropped < 20 {
				t.Fatalf("%d of 30 reached pion and %d were dropped, want at most the burst of 10 through", passed, dropped)
			}
			if len(r.sent()) != 0 {
				t.Fatalf("the gate answered %d of them itself, want none", len(r.sent()))
			}
			if _, v := g.Inspect(aliceAllocate(t), clientAddr(), localAddr(), r); v == gate.Answered {
				t.Fatal("a correctly signed Allocate from the same client was dropped")
			}
		})
	}
}

// TestBadFingerprintDroppedAndCharged: RFC 8489 §6.3 — a request whose
// FINGERPRINT does not match is not STUN and gets no answer; it is counted
// and charged to the client's rate limit. A matching FINGERPRINT and none at
// all both pass.
func TestBadFingerprintDroppedAndCharged(t *testing.T) {
	p := strictPolicy()
	p.UnauthenticatedRate = 1 // burst 2
	bad := 0
	g := gate.New(p, gate.Hooks{BadFingerprint: func(net.Addr) { bad++ }})
	r := &responder{}

	signed := aliceAllocate(t) // ends in a FINGERPRINT
	if _, v := g.Inspect(signed, clientAddr(), localAddr(), r); v == gate.Answered {
		t.Fatal("a request with a matching FINGERPRINT was dropped")
	}
	corrupt := append([]byte(nil), signed...)
	corrupt[len(corrupt)-1] ^= 0xFF
	for i := 0; i < 3; i++ {
		if _, v := g.Inspect(corrupt, clientAddr(), localAddr(), r); v != gate.Answered {
			t.Fatalf("request %d with a wrong FINGERPRINT: verdict %v, want dropped", i, v)
		}
	}
	if bad != 3 || len(r.sent()) != 0 {
		t.Fatalf("%d counted, %d answered: want 3 counted and none answered", bad, len(r.sent()))
	}
	binding, err := stun.Build(stun.TransactionID, stun.BindingRequest)
	if err != nil {
		t.Fatal(err)
	}
	if _, v := g.Inspect(binding.Raw, clientAddr(), localAddr(), r); v != gate.Answered {
		t.Fatal("a Binding without FINGERPRINT passed: the wrong FINGERPRINTs were not charged")
	}
	other := &net.UDPAddr{IP: net.IPv4(127, 0, 0, 9), Port: 1}
	if _, v := g.Inspect(binding.Raw, other, localAddr(), r); v != gate.Pass {
		t.Fatal("a Binding without FINGERPRINT from another client was dropped")
	}
}
