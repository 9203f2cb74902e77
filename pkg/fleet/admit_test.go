package fleet

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestAdmitUserQuotaAcrossNodes: a user's limit holds for the fleet, not
// per node; a release on one node lets the next allocation in on another.
func TestAdmitUserQuotaAcrossNodes(t *testing.T) {
	r := startRedis(t)
	a, b, c := r.open(Options{Node: "a"}), r.open(Options{Node: "b"}), r.open(Options{Node: "c"})

	mustAdmit(t, a, "alice", 2, 0, nil)
	mustAdmit(t, b, "alice", 2, 0, nil)
	for _, n := range []*Client{a, b, c} {
		mustAdmit(t, n, "alice", 2, 0, ErrUserQuota)
	}
	mustAdmit(t, c, "bob", 2, 0, nil) // another user's count is its own

	a.Release("alice")
	eventually(t, 2*time.Second, "a's release reaches c", func() bool {
		return c.Admit(ctxT(t), "alice", 2, 0) == nil
	})
	mustAdmit(t, b, "alice", 2, 0, ErrUserQuota)
	if got := c.Stats().Held; got != 2 {
		t.Errorf("c holds %d, want 2 (alice, bob)", got)
	}
}

// TestAdmitTotalQuota: the fleet total counts every user on every live node.
func TestAdmitTotalQuota(t *testing.T) {
	r := startRedis(t)
	a, b := r.open(Options{Node: "a"}), r.open(Options{Node: "b"})

	mustAdmit(t, a, "u1", 0, 3, nil)
	mustAdmit(t, b, "u2", 0, 3, nil)
	mustAdmit(t, b, "u3", 0, 3, nil)
	mustAdmit(t, a, "u4", 0, 3, ErrTotalQuota)
	b.Release("u2")
	eventually(t, 2*time.Second, "b's release reaches a", func() bool {
		return a.Admit(ctxT(t), "u4", 0, 3) == nil
	})
}

// TestReleaseNeverBelowZero: a Release without a count here changes
// nothing, in this node's books or in Redis, so it cannot hide a later
// allocation from a rebuild.
func TestReleaseNeverBelowZero(t *testing.T) {
	r := startRedis(t)
	a, b := r.open(Options{Node: "a"}), r.open(Options{Node: "b"})

	mustAdmit(t, a, "alice", 1, 0, nil)
	b.Release("alice") // b holds none of alice's
	b.Release("alice")
	if err := b.sendDeltas(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	admin := r.admin()
	if admin.HExists(ctxT(t), "t:users:alice", "b").Val() {
		t.Error("b has a field for alice")
	}
	mustAdmit(t, b, "alice", 1, 0, ErrUserQuota)
	mustAdmit(t, b, "bob", 0, 0, nil)
	if err := b.rebuild(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	if n, _ := admin.HGet(ctxT(t), "t:total", "b").Int(); n != 1 {
		t.Errorf("after a rebuild b's total is %d, want 1 (bob)", n)
	}
	if h := b.Stats().Held; h != 1 {
		t.Errorf("b holds %d, want 1", h)
	}
}

// TestCloseReleasesAtOnce: a cleanly stopped node's share is gone the
// moment Close returns, without waiting for its lease.
func TestCloseReleasesAtOnce(t *testing.T) {
	r := startRedis(t)
	a, b := r.open(Options{Node: "a", Lease: time.Minute}), r.open(Options{Node: "b"})

	mustAdmit(t, a, "alice", 2, 2, nil)
	mustAdmit(t, a, "alice", 2, 2, nil)
	mustAdmit(t, b, "alice", 2, 2, ErrUserQuota)
	start := time.Now()
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("Close took %v", d) // nothing in it should wait for a beat's time
	}
	mustAdmit(t, b, "alice", 2, 2, nil)
	mustAdmit(t, b, "alice", 2, 2, nil)
	if n, err := r.admin().ZScore(ctxT(t), "t:nodes", "a").Result(); err == nil {
		t.Errorf("a still in the live set (score %v)", n)
	}
}

// TestCancelledAdmit: an Admit the caller cancels says nothing about
// Redis (the Client stays up) but its script may have run, so the next
// beat rewrites this node's count: a count Redis holds that this node does
// not know of is gone.
func TestCancelledAdmit(t *testing.T) {
	r := startRedis(t)
	a, b := r.open(Options{Node: "a", Lease: 10 * time.Second}), r.open(Options{Node: "b"})
	admin := r.admin()
	// What a cancelled script that did run leaves behind.
	if err := admin.HSet(ctxT(t), "t:users:alice", "a", 1).Err(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := a.Admit(ctx, "alice", 1, 0)
	if !errors.Is(err, context.Canceled) || errors.Is(err, ErrUnavailable) {
		t.Errorf("cancelled Admit = %v, want context.Canceled and not ErrUnavailable", err)
	}
	if !a.Stats().Up {
		t.Error("a caller's cancellation took the Client down")
	}
	eventually(t, 2*time.Second, "a's phantom count rewritten", func() bool {
		return !admin.HExists(ctxT(t), "t:users:alice", "a").Val()
	})
	mustAdmit(t, b, "alice", 1, 0, nil)
}

// TestDetachLeavesTheShareToASuccessor: a node that hands over keeps its
// entries for the successor under its name, which counts them as its own.
func TestDetachLeavesTheShareToASuccessor(t *testing.T) {
	r := startRedis(t)
	a, b := r.open(Options{Node: "a", Lease: 3 * time.Second}), r.open(Options{Node: "b"})
	mustAdmit(t, a, "alice", 2, 0, nil)
	mustAdmit(t, a, "alice", 2, 0, nil)
	if err := a.Detach(); err != nil {
		t.Fatal(err)
	}
	if _, err := r.admin().ZScore(ctxT(t), "t:nodes", "a").Result(); err != nil {
		t.Fatalf("a left the live set on Detach: %v", err)
	}
	mustAdmit(t, b, "alice", 2, 0, ErrUserQuota)
	// The successor holds what it took over and releases one of them.
	a2 := r.open(Options{Node: "a", Lease: 3 * time.Second})
	a2.Hold("alice")
	a2.Hold("alice")
	a2.Release("alice")
	deadline := time.Now().Add(5 * time.Second)
	for {
		n, _ := r.admin().HGet(ctxT(t), "t:users:alice", "a").Int()
		if n == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the successor's count is %d, want 1", n)
		}
		time.Sleep(20 * time.Millisecond) // written in the background
	}
	mustAdmit(t, b, "alice", 2, 0, nil)
	mustAdmit(t, b, "alice", 2, 0, ErrUserQuota)
}

// TestRetireKeepsOnlyUsage: a retired node's counts are its successor's
// to change, but the usage of what drains there still reaches the stream.
func TestRetireKeepsOnlyUsage(t *testing.T) {
	r := startRedis(t)
	a := r.open(Options{Node: "a", Lease: 3 * time.Second})
	mustAdmit(t, a, "alice", 0, 0, nil)
	a.Retire()
	a.Release("alice")
	a.Hold("bob")
	if err := a.Admit(ctxT(t), "carol", 0, 0); !errors.Is(err, ErrClosed) {
		t.Errorf("Admit after Retire = %v, want ErrClosed", err)
	}
	a.Usage(Record{Allocation: "127.0.0.1:50000", User: "alice"})
	if err := a.Detach(); err != nil {
		t.Fatal(err)
	}
	admin := r.admin()
	if n, _ := admin.HGet(ctxT(t), "t:users:alice", "a").Int(); n != 1 {
		t.Errorf("alice's count here %d after a retired Release, want 1", n)
	}
	if n, _ := admin.HGet(ctxT(t), "t:users:bob", "a").Int(); n != 0 {
		t.Errorf("bob counted %d by a retired Hold", n)
	}
	if n, err := admin.XLen(ctxT(t), "t:usage").Result(); err != nil || n != 1 {
		t.Errorf("usage stream holds %d (%v), want the record written after Retire", n, err)
	}
}

// TestRetiredWritesUsageAfterAnOutage: with no heartbeat to probe Redis, a
// retired Client's writer retries the usage records itself.
func TestRetiredWritesUsageAfterAnOutage(t *testing.T) {
	r := startRedis(t)
	a := r.open(Options{Node: "a", Lease: 3 * time.Second})
	a.Retire()
	r.stop()
	a.Usage(Record{Allocation: "127.0.0.1:50000", User: "alice"})
	r.start()
	a.Usage(Record{Allocation: "127.0.0.1:50002", User: "alice"})
	admin := r.admin()
	deadline := time.Now().Add(5 * time.Second)
	for admin.XLen(ctxT(t), "t:usage").Val() != 2 {
		if time.Now().After(deadline) {
			t.Fatalf("stream holds %d of the 2 records; stats %+v", admin.XLen(ctxT(t), "t:usage").Val(), a.Stats())
		}
		time.Sleep(50 * time.Millisecond) // the writer's retry, every second
	}
	if err := a.Detach(); err != nil {
		t.Fatal(err)
	}
}
