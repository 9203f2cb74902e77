package fleet

import (
	"errors"
	"fmt"
	"maps"
	"testing"
	"time"

	"github.com/turnd/turnd/pkg/drain/draintest"
)

// TestUsageStream: every node's usage records land in the one stream,
// each with the node's name and every figure of the record.
func TestUsageStream(t *testing.T) {
	r := startRedis(t)
	a, b := r.open(Options{Node: "a"}), r.open(Options{Node: "b"})
	start := time.Date(2026, 12, 1, 10, 0, 0, 123000000, time.UTC)
	a.Usage(Record{Allocation: "192.0.2.1:50000", User: "alice", Client: "198.51.100.7:4000",
		Transport: "udp", Relay: "192.0.2.1:50000", Reason: "released", Start: start,
		Duration: 90 * time.Second, ToPeerBytes: 1000, ToPeerPackets: 10, FromPeerBytes: 2000, FromPeerPackets: 20})
	b.Usage(Record{Allocation: "192.0.2.2:50001", User: "bob"})

	admin := r.admin()
	eventually(t, 2*time.Second, "two entries in the stream", func() bool {
		return admin.XLen(ctxT(t), "t:usage").Val() == 2
	})
	entries, err := admin.XRange(ctxT(t), "t:usage", "-", "+").Result()
	if err != nil {
		t.Fatal(err)
	}
	byNode := map[string]map[string]any{}
	for _, e := range entries {
		byNode[fmt.Sprint(e.Values["node"])] = e.Values
	}
	want := map[string]any{
		"node": "a", "allocation": "192.0.2.1:50000", "user": "alice", "client": "198.51.100.7:4000",
		"transport": "udp", "relay": "192.0.2.1:50000", "reason": "released",
		"start": "2026-12-01T10:00:00.123Z", "duration_ms": "90000",
		"to_peer_bytes": "1000", "to_peer_packets": "10", "from_peer_bytes": "2000", "from_peer_packets": "20",
	}
	if !maps.Equal(byNode["a"], want) {
		t.Errorf("a's entry = %v\nwant %v", byNode["a"], want)
	}
	if byNode["b"]["user"] != "bob" {
		t.Errorf("b's entry = %v", byNode["b"])
	}
}

// TestUsageQueuedWhileDown: records wait in memory while Redis does not
// answer, the oldest dropped (and counted) past UsageMax, and the rest
// reach the stream once the Client is up again.
func TestUsageQueuedWhileDown(t *testing.T) {
	r := startRedis(t)
	clock := draintest.NewFakeClock(time.Now())
	a := r.open(Options{Node: "a", Lease: 10 * time.Second, UsageMax: 3, Clock: clock})

	r.pause()
	mustAdmit(t, a, "alice", 0, 0, ErrUnavailable) // now down
	for i := range 5 {
		a.Usage(Record{Allocation: fmt.Sprint(i), User: "alice"})
	}
	if s := a.Stats(); s.UsageQueued != 3 || s.UsageDropped != 2 {
		t.Errorf("while down: %d queued, %d dropped; want 3, 2", s.UsageQueued, s.UsageDropped)
	}
	// A node opened while Redis hangs: Open is bounded (a beat's and a
	// subscription's deadline, Lease/3 each), and its Close says what
	// billing lost.
	start := time.Now()
	b := r.open(Options{Node: "b", Clock: clock})
	if d := time.Since(start); d > time.Second {
		t.Errorf("Open with Redis paused took %v", d)
	}
	mustAdmit(t, b, "alice", 0, 0, ErrUnavailable)
	b.usage.push(Record{Allocation: "lost"})
	if err := b.Close(); !errors.Is(err, ErrUnavailable) {
		t.Errorf("Close with a record it could not write = %v, want ErrUnavailable", err)
	}
	r.resume()
	probeUntilUp(t, clock, a)
	admin := r.admin()
	eventually(t, 2*time.Second, "the queued records in the stream", func() bool {
		return admin.XLen(ctxT(t), "t:usage").Val() == 3
	})
	entries, err := admin.XRange(ctxT(t), "t:usage", "-", "+").Result()
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range entries {
		if got, want := e.Values["allocation"], fmt.Sprint(i+2); got != want {
			t.Errorf("entry %d is allocation %v, want %s (the newest kept)", i, got, want)
		}
	}
	if s := a.Stats(); s.UsageQueued != 0 {
		t.Errorf("after the outage %d records still queued", s.UsageQueued)
	}
}

// TestUsageStreamCapped: the stream stays near UsageMax entries (MAXLEN ~
// trims whole stream nodes, 100 entries each by default). Records go in
// ten at a time, the queue's own cap, each ten written before the next.
func TestUsageStreamCapped(t *testing.T) {
	r := startRedis(t)
	a := r.open(Options{Node: "a", UsageMax: 10})
	admin := r.admin()
	for i := range 600 {
		a.Usage(Record{Allocation: fmt.Sprint(i)})
		if i%10 != 9 {
			continue
		}
		eventually(t, 5*time.Second, fmt.Sprintf("record %d in the stream", i), func() bool {
			last, err := admin.XRevRangeN(ctxT(t), "t:usage", "+", "-", 1).Result()
			return err == nil && len(last) == 1 && last[0].Values["allocation"] == fmt.Sprint(i)
		})
	}
	if s := a.Stats(); s.UsageDropped != 0 {
		t.Fatalf("%d records dropped while Redis was up", s.UsageDropped)
	}
	if n := admin.XLen(ctxT(t), "t:usage").Val(); n > 10+100 {
		t.Errorf("stream holds %d entries; UsageMax 10 should keep it near 10", n)
	}
}

// TestCloseWritesQueuedUsage: records still queued when Close runs are
// written before the node leaves (a drain's last allocations end just
// before it). The record is queued without waking the writer, so only
// Close can write it.
func TestCloseWritesQueuedUsage(t *testing.T) {
	r := startRedis(t)
	a := r.open(Options{Node: "a"})
	a.usage.push(Record{Allocation: "last", User: "alice"})
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	entries, err := r.admin().XRange(ctxT(t), "t:usage", "-", "+").Result()
	if err != nil || len(entries) != 1 || entries[0].Values["allocation"] != "last" {
		t.Errorf("stream after Close: %v, %v; want the one record", entries, err)
	}
}
