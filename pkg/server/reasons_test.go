package server_test

import (
	"net"
	"testing"
	"time"

	"github.com/pion/stun/v4"

	"github.com/turnd/turnd/internal/auth"
	"github.com/turnd/turnd/internal/testturn"
)

// TestErrorReasons: error responses pion builds itself leave turnd with
// their reason phrase over UDP and TCP, still signed with the client's key
// where pion signed them; the unsigned 401 to a first leg stays bare (the
// amplification bound).
func TestErrorReasons(t *testing.T) {
	opts := testOptions()
	opts.Config.Peers.Denied = []string{"192.0.2.0/24"}
	s := start(t, opts)
	for _, network := range []string{"udp", "tcp"} {
		t.Run(network, func(t *testing.T) {
			c := dial(t, s, network)
			first := unauthenticatedAllocate(t, c)
			if code, reason := reasonOf(t, first); code != 401 || reason != "" {
				t.Errorf("first leg: %d %q, want a bare 401", code, reason)
			}
			var realm stun.Realm
			_ = realm.GetFrom(first)

			stale, err := stun.Build(stun.TransactionID, stun.NewType(stun.MethodAllocate, stun.ClassRequest),
				testturn.UDPTransport, stun.NewUsername("demo"), realm, stun.NewNonce("not-a-nonce-of-this-server"),
				stun.MessageIntegrity(auth.LongTermKey("demo", realm.String(), "demo")), stun.Fingerprint)
			if err != nil {
				t.Fatal(err)
			}
			if code, reason := reasonOf(t, c.RoundTrip(stale)); code != 438 || reason != "Stale Nonce" {
				t.Errorf("forged nonce: %d %q, want 438 Stale Nonce", code, reason)
			}

			c.MustAllocate()
			resp := c.Request(stun.MethodCreatePermission, testturn.PeerAddr(&net.UDPAddr{IP: net.IPv4(192, 0, 2, 7), Port: 9}))
			if code, reason := reasonOf(t, resp); code != 403 || reason != "Forbidden" {
				t.Errorf("denied peer: %d %q, want 403 Forbidden", code, reason)
			}
			if !c.Signed(resp) {
				t.Error("403 with its reason is not signed with the client's key")
			}
			resp = c.Request(stun.MethodAllocate, testturn.UDPTransport, testturn.Lifetime(time.Minute))
			if code, reason := reasonOf(t, resp); code != 437 || reason != "Allocation Mismatch" {
				t.Errorf("second Allocate: %d %q, want 437 Allocation Mismatch", code, reason)
			}
			if !c.Signed(resp) {
				t.Error("437 with its reason is not signed with the client's key")
			}
		})
	}
}

// reasonOf returns a response's error code and reason phrase.
func reasonOf(t *testing.T, m *stun.Message) (int, string) {
	t.Helper()
	var ec stun.ErrorCodeAttribute
	if err := ec.GetFrom(m); err != nil {
		t.Fatalf("%v is no error response: %v", m, err)
	}
	return int(ec.Code), string(ec.Reason)
}
