package server_test

import (
	"log/slog"
	"testing"
	"time"

	"github.com/turnd/turnd/pkg/server"
)

// usageLog collects the usage records ("allocation deleted") a server logs.
func usageLog(opts *server.Options) <-chan map[string]any {
	records := make(chan map[string]any, 16)
	opts.Logger = slog.New(hookLog(func(r slog.Record) {
		if r.Message != "allocation deleted" {
			return
		}
		m := map[string]any{}
		r.Attrs(func(a slog.Attr) bool {
			m[a.Key] = a.Value.Resolve().Any()
			return true
		})
		records <- m
	}))
	return records
}

func nextRecord(t *testing.T, records <-chan map[string]any) map[string]any {
	t.Helper()
	select {
	case m := <-records:
		return m
	case <-time.After(waitTimeout):
		t.Fatal("no usage record")
		return nil
	}
}

// wantFields checks the record's fields that the test can predict.
func wantFields(t *testing.T, rec map[string]any, want map[string]any) {
	t.Helper()
	for k, v := range want {
		if rec[k] != v {
			t.Errorf("%s = %v (%T), want %v; record %v", k, rec[k], rec[k], v, rec)
		}
	}
	for _, k := range []string{"client", "relay", "start", "duration"} {
		if rec[k] == nil || rec[k] == "" {
			t.Errorf("no %s in %v", k, rec)
		}
	}
}

// TestUsageRecordOfAReleasedAllocation: the client's Refresh with lifetime
// 0 ends its allocation with one record of what it relayed each way.
func TestUsageRecordOfAReleasedAllocation(t *testing.T) {
	opts := testOptions()
	records := usageLog(&opts)
	s := start(t, opts)
	peer := echoPeer(t)
	c := dial(t, s, "udp")
	c.MustAllocate()
	mustPermit(t, c, peer)
	for _, data := range []string{"hello", "usage", "bytes"} {
		mustEcho(t, c, peer, data)
	}
	if code := c.Refresh(0); code != 0 {
		t.Fatalf("Refresh 0: error %d", code)
	}
	wantFields(t, nextRecord(t, records), map[string]any{
		"user": "demo", "transport": "udp", "reason": server.EndReleased,
		"to_peer_packets": uint64(3), "to_peer_bytes": uint64(15),
		"from_peer_packets": uint64(3), "from_peer_bytes": uint64(15),
		"permissions": uint64(1), "channels": uint64(0),
	})
}

// TestUsageRecordReasons: a TCP client's closed connection, and
// allocations the server closes as it stops, each say why.
func TestUsageRecordReasons(t *testing.T) {
	t.Run("connection closed", func(t *testing.T) {
		opts := testOptions()
		records := usageLog(&opts)
		s := start(t, opts)
		c := dial(t, s, "tcp")
		c.MustAllocate()
		c.Close()
		wantFields(t, nextRecord(t, records), map[string]any{"reason": server.EndConnectionClosed, "transport": "tcp"})
	})
	for _, reason := range []string{"", server.EndDrainDeadline} {
		t.Run("closed "+reason, func(t *testing.T) {
			opts := testOptions()
			records := usageLog(&opts)
			s := start(t, opts)
			dial(t, s, "udp").MustAllocate()
			if reason != "" {
				s.SetShutdownReason(reason)
			} else {
				reason = server.EndShutdown
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			wantFields(t, nextRecord(t, records), map[string]any{"reason": reason, "user": "demo"})
			if n := s.Table().Count(); n != 0 {
				t.Fatalf("%d allocations left in the registry after Close", n)
			}
		})
	}
}
