package fleet

import (
	"testing"
	"time"

	"github.com/turnd/turnd/pkg/drain/draintest"
)

// TestLapsedLeaseReleasesShare: a node that stops beating (its clock never
// moves, as if it hung or was killed) loses its share within the lease,
// while a node that beats keeps its own. live also holds alice, so her
// key is renewed and only the lease decides.
func TestLapsedLeaseReleasesShare(t *testing.T) {
	r := startRedis(t)
	live := r.open(Options{Node: "live"})
	start := time.Now() // hung's lease runs from its Open's beat, not from its Admits
	hung := r.open(Options{Node: "hung", Clock: draintest.NewFakeClock(time.Now())})
	other := r.open(Options{Node: "other"})

	mustAdmit(t, live, "carol", 1, 0, nil)
	mustAdmit(t, live, "alice", 3, 0, nil)
	mustAdmit(t, hung, "alice", 3, 0, nil)
	mustAdmit(t, hung, "alice", 3, 0, nil)
	mustAdmit(t, other, "alice", 3, 0, ErrUserQuota)

	eventually(t, testLease+500*time.Millisecond, "hung's share released", func() bool {
		return other.Admit(ctxT(t), "alice", 3, 0) == nil
	})
	if waited := time.Since(start); waited < testLease {
		t.Errorf("hung's share released after %v, before its lease (%v) could pass", waited, testLease)
	}
	mustAdmit(t, other, "alice", 3, 0, nil)
	mustAdmit(t, other, "alice", 3, 0, ErrUserQuota) // live's one still counts
	// By now more than a lease has passed since live's last Admit: only its
	// heartbeat keeps carol counted.
	mustAdmit(t, other, "carol", 1, 0, ErrUserQuota)
	if s, err := r.admin().HGet(ctxT(t), "t:users:alice", "hung").Result(); err == nil {
		t.Errorf("hung's field for alice still there (%s): the admission should delete a dead node's fields", s)
	}
}

// TestRebuildAfterFlush: Redis losing everything (FLUSHALL, its scripts
// too) is healed by the next beat, which finds its lease gone and rewrites
// the node's counts, including allocations held without the fleet.
func TestRebuildAfterFlush(t *testing.T) {
	r := startRedis(t)
	clock := draintest.NewFakeClock(time.Now())
	a := r.open(Options{Node: "a", Lease: 10 * time.Second, Clock: clock})
	b := r.open(Options{Node: "b", Lease: 10 * time.Second})
	admin := r.admin()

	mustAdmit(t, a, "alice", 2, 0, nil)
	mustAdmit(t, a, "alice", 2, 0, nil)
	a.Hold("bob")
	eventually(t, 2*time.Second, "bob's hold written", func() bool {
		n, _ := admin.HGet(ctxT(t), "t:users:bob", "a").Int()
		return n == 1
	})
	if err := admin.FlushAll(ctxT(t)).Err(); err != nil {
		t.Fatal(err)
	}
	if err := admin.ScriptFlush(ctxT(t)).Err(); err != nil {
		t.Fatal(err)
	}
	mustAdmit(t, b, "alice", 2, 0, nil) // Redis forgot a: b gets one
	b.Release("alice")
	eventually(t, 2*time.Second, "b's release written", func() bool {
		return admin.HExists(ctxT(t), "t:users:alice", "b").Val() == false
	})

	if err := clock.WaitTimers(ctxT(t), 1); err != nil {
		t.Fatal(err)
	}
	clock.Advance(10 * time.Second / 3)
	eventually(t, 2*time.Second, "a's counts rebuilt", func() bool {
		al, _ := admin.HGet(ctxT(t), "t:users:alice", "a").Int()
		bo, _ := admin.HGet(ctxT(t), "t:users:bob", "a").Int()
		tot, _ := admin.HGet(ctxT(t), "t:total", "a").Int()
		return al == 2 && bo == 1 && tot == 3
	})
	mustAdmit(t, b, "alice", 2, 0, ErrUserQuota)
	mustAdmit(t, b, "x", 0, 4, nil)
	mustAdmit(t, b, "y", 0, 4, ErrTotalQuota)
}

// TestRestartedNodeForgetsOldShare: a node that crashed and came back
// under the same name within its lease starts from its own (empty)
// books, not from the counts its earlier run left in Redis.
func TestRestartedNodeForgetsOldShare(t *testing.T) {
	r := startRedis(t)
	old := r.open(Options{Node: "a", Lease: 10 * time.Second, Clock: draintest.NewFakeClock(time.Now())})
	b := r.open(Options{Node: "b"})
	mustAdmit(t, old, "alice", 2, 3, nil)
	mustAdmit(t, old, "alice", 2, 3, nil)
	mustAdmit(t, b, "alice", 2, 3, ErrUserQuota)
	// The crash: the old run's goroutines stop, its fields and lease stay.
	old.state.close()
	old.cancel()
	_ = old.sub.Close()
	old.wg.Wait()

	a := r.open(Options{Node: "a", Lease: 10 * time.Second})
	mustAdmit(t, b, "alice", 2, 3, nil)
	mustAdmit(t, b, "alice", 2, 3, nil)
	mustAdmit(t, a, "bob", 0, 3, nil)
	mustAdmit(t, a, "carol", 0, 3, ErrTotalQuota)
}
