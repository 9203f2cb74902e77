package turn_test

import (
	"slices"
	"testing"
	"time"

	"github.com/pion/stun/v4"

	"github.com/turnd/turnd/internal/auth"
)

// TestAuthentication holds Serve to RFC 8489 §9.2.4 in pion's order: what
// each way of getting credentials wrong is answered, whether the answer is
// signed, and that REST credentials verify under any configured secret.
func TestAuthentication(t *testing.T) {
	e := newEnv(t)
	old, err := auth.NewNonces(nil, 0) // another process's secret
	if err != nil {
		t.Fatal(err)
	}
	aliceKey := aliceUser().key
	signed := func(nonce string, s ...stun.Setter) []byte {
		base := []stun.Setter{stun.TransactionID, stun.NewType(stun.MethodRefresh, stun.ClassRequest)}
		return raw(t, append(append(base, s...), stun.NewNonce(nonce), stun.MessageIntegrity(aliceKey), stun.Fingerprint)...)
	}
	fresh := e.nonces.Issue(t0)
	for _, tc := range []struct {
		name   string
		pkt    func() []byte
		code   int
		reason string
		key    []byte // the key the answer is signed with; nil: unsigned
		nonce  bool   // the answer carries REALM and a fresh NONCE
	}{
		{"no MESSAGE-INTEGRITY: 401, bare", func() []byte {
			return e.build(t, stun.MethodAllocate, user{}, transportUDP())
		}, 401, "", nil, true},
		{"MESSAGE-INTEGRITY-SHA256 alone: as none", func() []byte {
			return raw(t, stun.TransactionID, stun.NewType(stun.MethodAllocate, stun.ClassRequest), stun.NewUsername(alice),
				stun.NewRealm(realm), stun.NewNonce(fresh),
				stun.RawAttribute{Type: stun.AttrMessageIntegritySHA256, Value: make([]byte, 32)}, stun.Fingerprint)
		}, 401, "", nil, true},
		{"no NONCE: 400", func() []byte {
			return raw(t, stun.TransactionID, stun.NewType(stun.MethodRefresh, stun.ClassRequest), stun.NewUsername(alice),
				stun.NewRealm(realm), stun.MessageIntegrity(aliceKey), stun.Fingerprint)
		}, 400, "Bad Request", nil, false},
		{"nonce of another secret: 438", func() []byte {
			return signed(old.Issue(t0), stun.NewUsername(alice), stun.NewRealm(realm))
		}, 438, "Stale Nonce", nil, true},
		{"nonce an hour old: 438", func() []byte {
			return signed(e.nonces.Issue(t0.Add(-time.Hour)), stun.NewUsername(alice), stun.NewRealm(realm))
		}, 438, "Stale Nonce", nil, true},
		{"stale nonce without USERNAME: 438, the nonce is looked at first", func() []byte {
			return signed("not-a-nonce", stun.NewRealm(realm))
		}, 438, "Stale Nonce", nil, true},
		{"no USERNAME: 400", func() []byte { return signed(fresh, stun.NewRealm(realm)) }, 400, "Bad Request", nil, false},
		{"no REALM: 400", func() []byte { return signed(fresh, stun.NewUsername(alice)) }, 400, "Bad Request", nil, false},
		{"wrong password: 401", func() []byte {
			return e.build(t, stun.MethodRefresh, user{alice, auth.LongTermKey(alice, realm, "guess")})
		}, 401, "", nil, true},
		{"unknown user, signed with the decoy key: 401", func() []byte {
			return e.build(t, stun.MethodRefresh, user{"mallory", e.store.Decoy()[0]})
		}, 401, "", nil, true},
		{"another realm: 401", func() []byte {
			return signed(fresh, stun.NewUsername(alice), stun.NewRealm("elsewhere"))
		}, 401, "", nil, true},
		{"expired REST username: 401", func() []byte {
			name := "1700000000:bob"
			return e.build(t, stun.MethodRefresh, user{name, auth.LongTermKey(name, realm, auth.RESTPassword("s1", name))})
		}, 401, "", nil, true},
		{"REST username under an unknown secret: 401", func() []byte {
			return e.build(t, stun.MethodRefresh, user{restUser, restKey("s3")})
		}, 401, "", nil, true},
		{"static user: verified, the answer signed with its key", func() []byte {
			return e.build(t, stun.MethodRefresh, aliceUser())
		}, 437, "Allocation Mismatch", aliceKey, false},
		{"REST user under the first secret: signed with that key", func() []byte {
			return e.build(t, stun.MethodRefresh, user{restUser, restKey("s1")})
		}, 437, "Allocation Mismatch", restKey("s1"), false},
		{"REST user under the second secret (rotation): signed with that key", func() []byte {
			return e.build(t, stun.MethodRefresh, user{restUser, restKey("s2")})
		}, 437, "Allocation Mismatch", restKey("s2"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, l := udpClient(1)
			resp := e.ask(t, c, l, tc.pkt())
			code, reason := codeOf(resp)
			if code != tc.code || reason != tc.reason {
				t.Fatalf("answered %d %q, want %d %q", code, reason, tc.code, tc.reason)
			}
			switch {
			case tc.key == nil && resp.Contains(stun.AttrMessageIntegrity):
				t.Error("the answer to an unverified request is signed")
			case tc.key != nil && !signedWith(resp, tc.key):
				t.Error("the answer is not signed with the key that verified the request")
			}
			if !resp.Contains(stun.AttrFingerprint) {
				t.Error("no FINGERPRINT, though the request carried one")
			}
			if !tc.nonce {
				return
			}
			var n stun.Nonce
			var rlm stun.Realm
			if n.GetFrom(resp) != nil || rlm.GetFrom(resp) != nil || rlm.String() != realm {
				t.Fatalf("no NONCE or REALM %q in %v", rlm, attrTypes(resp))
			}
			if err := e.nonces.Check(n.String(), e.clock.Now()); err != nil {
				t.Errorf("the NONCE given does not check: %v", err)
			}
			// pion's order, which clients have seen for years.
			if got, want := attrTypes(resp), []stun.AttrType{stun.AttrErrorCode, stun.AttrNonce, stun.AttrRealm, stun.AttrFingerprint}; !slices.Equal(got, want) {
				t.Errorf("attributes %v, want %v", got, want)
			}
		})
	}
	if got := e.events.refusals(); !slices.Contains(got, "Refresh auth alice") || !slices.Contains(got, "Refresh auth mallory") {
		t.Errorf("refusals %q: a wrong password and an unknown user are reported", got)
	}
}

// transportUDP is REQUESTED-TRANSPORT UDP.
func transportUDP() stun.Setter {
	return stun.RawAttribute{Type: stun.AttrRequestedTransport, Value: []byte{17, 0, 0, 0}}
}

// TestMultiKeySignsAnswersWithTheClientsKey: with several REST secrets,
// each answer is signed with the key the request verified with, whichever
// secret that was, and the allocation is the user's under any of them.
func TestMultiKeySignsAnswersWithTheClientsKey(t *testing.T) {
	e := newEnv(t)
	c, _ := udpClient(1)
	s1, s2 := user{restUser, restKey("s1")}, user{restUser, restKey("s2")}
	resp := e.do(t, c, e.build(t, stun.MethodAllocate, s2, transportUDP()))
	if !isCode(resp, 0) || !signedWith(resp, s2.key) || signedWith(resp, s1.key) {
		t.Fatalf("Allocate under the second secret: code %v, signed with it %v", resp.Type, signedWith(resp, s2.key))
	}
	if a, _ := e.table.Get(c.Tuple); a == nil || a.User != "bob" || a.Username != restUser {
		t.Fatalf("allocation %+v, want bob's", a)
	}
	resp = e.do(t, c, e.build(t, stun.MethodRefresh, s1))
	if !isCode(resp, 0) || !signedWith(resp, s1.key) {
		t.Errorf("Refresh under the first secret: %v, signed with it %v", resp.Type, signedWith(resp, s1.key))
	}
}
