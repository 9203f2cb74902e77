package server_test

import (
	"testing"
	"time"

	"github.com/turnd/turnd/internal/testturn"
	"github.com/turnd/turnd/pkg/server"
)

// TestRevocationOnReload: a reload that lists a user in auth.revoked_users
// refuses that user's every request from then on (401: Allocate, and the
// Refresh of an allocation made before), and other users carry on. With
// disconnect_on_revoke their live allocations end at the reload.
func TestRevocationOnReload(t *testing.T) {
	for _, disconnect := range []bool{false, true} {
		name := "refuse only"
		if disconnect {
			name = "disconnect on revoke"
		}
		t.Run(name, func(t *testing.T) {
			opts := testOptions()
			opts.Config.Auth.Users["mallory"] = "m"
			records := usageLog(&opts)
			s := start(t, opts)
			peer := echoPeer(t)
			mallory, demo := dialAs(t, s, "udp", "mallory", "m"), dial(t, s, "udp")
			mallory.MustAllocate()
			demo.MustAllocate()
			mustPermit(t, mallory, peer)

			next := s.Config()
			next.Auth.RevokedUsers = []string{"mallory"}
			next.Auth.DisconnectOnRevoke = disconnect
			if _, err := s.Reload(next); err != nil {
				t.Fatal(err)
			}
			if disconnect {
				wantFields(t, nextRecord(t, records), map[string]any{"user": "mallory", "reason": server.EndDisconnected})
				if mallory.Echo(peer, "after") {
					t.Fatal("the revoked user's relay still carries data")
				}
			} else {
				mustEcho(t, mallory, peer, "still relayed until the next refresh")
			}
			if code := mallory.Refresh(5 * time.Minute); code != 401 && !(disconnect && code == 437) {
				t.Fatalf("the revoked user's Refresh: %d, want 401", code)
			}
			if code := testturn.ErrorCode(dialAs(t, s, "udp", "mallory", "m").Allocate()); code != 401 {
				t.Fatalf("the revoked user's new Allocate: %d, want 401", code)
			}
			if code := demo.Refresh(5 * time.Minute); code != 0 {
				t.Fatalf("another user's Refresh: error %d", code)
			}
			if s.Table().UserCount("mallory") != map[bool]int{false: 1, true: 0}[disconnect] {
				t.Fatalf("mallory holds %d allocations", s.Table().UserCount("mallory"))
			}
		})
	}
}
