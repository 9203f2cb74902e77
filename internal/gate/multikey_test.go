package gate_test

import (
	"bytes"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/pion/stun/v4"

	"github.com/turnd/turnd/internal/auth"
	"github.com/turnd/turnd/internal/gate"
)

// TestMultiKeyFindsTheSecret checks that with several TURN REST secrets the
// gate hands pion the key the client actually signed with, once, for every
// authenticated request (not only Allocate and Refresh).
func TestMultiKeyFindsTheSecret(t *testing.T) {
	secrets := []string{"old-secret", "new-secret"}
	store := auth.New(auth.Options{Realm: testRealm, Secrets: secrets, Users: map[string]string{testUser: testPass}})
	username := fmt.Sprintf("%d:bob", time.Now().Add(time.Hour).Unix())
	keyOf := func(secret string) []byte {
		return auth.LongTermKey(username, testRealm, auth.RESTPassword(secret, username))
	}
	peer := xorAddr(stun.AttrXORPeerAddress, net.IPv4(127, 0, 0, 2), 9)

	tests := []struct {
		name   string
		method stun.Method
		extra  []stun.Setter
		secret string
	}{
		{"Allocate, second secret", stun.MethodAllocate, []stun.Setter{transport(17)}, secrets[1]},
		{"Allocate, first secret", stun.MethodAllocate, []stun.Setter{transport(17)}, secrets[0]},
		{"CreatePermission, second secret", stun.MethodCreatePermission, []stun.Setter{peer}, secrets[1]},
		{"ChannelBind, second secret", stun.MethodChannelBind, []stun.Setter{stun.RawAttribute{Type: stun.AttrChannelNumber, Value: []byte{0x40, 0, 0, 0}}, peer}, secrets[1]},
		{"Refresh, second secret", stun.MethodRefresh, []stun.Setter{lifetime(time.Minute)}, secrets[1]},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := gate.New(&gate.Policy{Keys: store.Keys, MultiKey: true}, gate.Hooks{})
			key := keyOf(tc.secret)
			mustPass(t, g, request(t, tc.method, username, key, true, tc.extra...))
			if got, ok := g.TakeKey(clientAddr(), "other"); ok {
				t.Errorf("TakeKey for another username = %x", got)
			}
			otherClient := &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 50001}
			if got, ok := g.TakeKey(otherClient, username); ok {
				t.Errorf("TakeKey for another client = %x", got)
			}
			got, ok := g.TakeKey(clientAddr(), username)
			if !ok || !bytes.Equal(got, key) {
				t.Errorf("TakeKey = (%x, %v), want (%x, true)", got, ok, key)
			}
			if got, ok := g.TakeKey(clientAddr(), username); ok {
				t.Errorf("second TakeKey = (%x, true), want nothing", got)
			}
		})
	}
}

// TestMultiKeyRecordsNothingWhenNotNeeded: a single candidate key (a static
// user), a signature no key verifies, or MultiKey off leave nothing behind.
func TestMultiKeyRecordsNothingWhenNotNeeded(t *testing.T) {
	store := auth.New(auth.Options{Realm: testRealm, Secrets: []string{"s1", "s2"}, Users: map[string]string{testUser: testPass}})
	username := fmt.Sprintf("%d:bob", time.Now().Add(time.Hour).Unix())
	key := auth.LongTermKey(username, testRealm, auth.RESTPassword("s2", username))
	tests := []struct {
		name     string
		multiKey bool
		user     string
		pkt      []byte
	}{
		{"static user", true, testUser, request(t, stun.MethodCreatePermission, testUser, aliceKey(), true)},
		{"unknown secret", true, username, request(t, stun.MethodCreatePermission, username,
			auth.LongTermKey(username, testRealm, auth.RESTPassword("s3", username)), true)},
		// A signed Binding is answered without its credentials being checked.
		{"MultiKey off", false, username, request(t, stun.MethodBinding, username, key, true)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := gate.New(&gate.Policy{Keys: store.Keys, MultiKey: tc.multiKey}, gate.Hooks{})
			mustPass(t, g, tc.pkt)
			if got, ok := g.TakeKey(clientAddr(), tc.user); ok {
				t.Errorf("TakeKey = %x, want nothing", got)
			}
		})
	}
}

// TestMultiKeySignsAnswersWithTheClientsKey: a 300 to a client of the second
// secret must verify with that secret's key, not the first.
func TestMultiKeySignsAnswersWithTheClientsKey(t *testing.T) {
	store := auth.New(auth.Options{Realm: testRealm, Secrets: []string{"s1", "s2"}})
	username := fmt.Sprintf("%d:bob", time.Now().Add(time.Hour).Unix())
	key := auth.LongTermKey(username, testRealm, auth.RESTPassword("s2", username))
	g := gate.New(&gate.Policy{
		Keys:       store.Keys,
		MultiKey:   true,
		Alternates: fixed(&net.UDPAddr{IP: net.IPv4(127, 0, 0, 10), Port: 3478}),
	}, gate.Hooks{Accepting: func() bool { return false }})
	r := &responder{}
	if _, v := g.Inspect(request(t, stun.MethodAllocate, username, key, true, transport(17)), clientAddr(), localAddr(), r); v != gate.Answered {
		t.Fatalf("verdict %v, want Answered", v)
	}
	checkSigned(t, r.onlyReply(t), key)
}
