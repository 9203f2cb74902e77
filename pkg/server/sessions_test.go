package server_test

import (
	"testing"

	"github.com/turnd/turnd/pkg/server"
)

// TestDisconnectEndsAllocations: Disconnect by user ends each of that
// user's allocations at once — data stops, the next Refresh gets 437 —
// with a usage record saying so, and leaves other users' alone; by ID it
// ends just the one.
func TestDisconnectEndsAllocations(t *testing.T) {
	for _, network := range []string{"udp", "tcp"} {
		t.Run(network, func(t *testing.T) {
			opts := testOptions()
			opts.Config.Auth.Users["other"] = "other"
			records := usageLog(&opts)
			s := start(t, opts)
			peer := echoPeer(t)
			victim, bystander := dial(t, s, network), dialAs(t, s, network, "other", "other")
			victim.MustAllocate()
			bystander.MustAllocate()
			mustPermit(t, victim, peer)
			mustEcho(t, victim, peer, "before")

			sessions := s.Sessions("demo")
			if len(sessions) != 1 || sessions[0].User != "demo" || s.Usage(sessions[0]).Permissions != 1 {
				t.Fatalf("sessions of demo: %+v", sessions)
			}
			if n := s.Disconnect("demo", "", "test"); n != 1 {
				t.Fatalf("Disconnect ended %d allocations, want 1", n)
			}
			wantFields(t, nextRecord(t, records), map[string]any{
				"reason": server.EndDisconnected, "user": "demo", "to_peer_bytes": uint64(6),
			})
			if victim.Echo(peer, "after") {
				t.Fatal("data still relayed after the disconnect")
			}
			if code := victim.Refresh(0); code != 437 {
				t.Fatalf("Refresh after the disconnect: %d, want 437", code)
			}
			if code := bystander.Refresh(0); code != 0 {
				t.Fatalf("the other user's Refresh: error %d", code)
			}
			wantFields(t, nextRecord(t, records), map[string]any{"reason": server.EndReleased, "user": "other"})
		})
	}
	t.Run("by id", func(t *testing.T) {
		s := start(t, testOptions())
		a, b := dial(t, s, "udp"), dial(t, s, "udp")
		a.MustAllocate()
		relayB := b.MustAllocate()
		if n := s.Disconnect("", relayB.String(), "test"); n != 1 {
			t.Fatalf("Disconnect by id ended %d, want 1", n)
		}
		if code := b.Refresh(0); code != 437 {
			t.Fatalf("disconnected client's Refresh: %d, want 437", code)
		}
		if code := a.Refresh(0); code != 0 {
			t.Fatalf("the other allocation's Refresh: error %d", code)
		}
		if n := s.Disconnect("", "127.0.0.1:1", "test"); n != 0 {
			t.Fatalf("an unknown id ended %d", n)
		}
	})
}
