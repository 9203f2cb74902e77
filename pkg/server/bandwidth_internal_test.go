package server

import (
	"testing"

	"github.com/turnd/turnd/pkg/allocation"
	"github.com/turnd/turnd/pkg/config"
)

// limitsOf returns a config.Limits reader that holds total as every user's
// user_total_bps.
func limitsOf(total int64) func() config.Limits {
	return func() config.Limits { return config.Limits{UserTotalBPS: total} }
}

// TestUserRatesLiveWithTheUsersAllocations: a user's shared rate is one
// for all of the user's allocations and is forgotten with the last of
// them, so the table holds no user without allocations.
func TestUserRatesLiveWithTheUsersAllocations(t *testing.T) {
	var u userRates
	a, b := u.acquire("alice", limitsOf(1000)), u.acquire("alice", limitsOf(1000))
	if a != b || u.get("alice") != a {
		t.Fatal("two allocations of one user got two rates")
	}
	if u.acquire("bob", limitsOf(0)) == a {
		t.Fatal("two users share a rate")
	}
	u.release("alice")
	if u.get("alice") != a {
		t.Fatal("alice's rate forgotten while an allocation of hers lives")
	}
	u.release("alice")
	u.release("bob")
	u.release("carol") // never acquired: nothing to forget
	if len(u.m) != 0 {
		t.Fatalf("rates of %d users kept after their allocations ended", len(u.m))
	}
}

// TestUserRatesKeepWhatAReloadSet: a reload's rate stays with a user whose
// next allocation was created under the config before it; a user's first
// allocation takes its rate from the config in force when it acquires.
func TestUserRatesKeepWhatAReloadSet(t *testing.T) {
	var u userRates
	inForce := int64(1000)
	limits := func() config.Limits { return config.Limits{UserTotalBPS: inForce} }
	shared := u.acquire("alice", limits)
	inForce = 2000
	u.set(limits) // the reload
	stale := limitsOf(1000)
	if u.acquire("alice", stale) != shared {
		t.Fatal("a second allocation got a rate of its own")
	}
	if got := shared.Rate(); got != 2000 {
		t.Fatalf("an allocation created under the old config set the user's rate to %d, undoing the reload's 2000", got)
	}
	if got := u.acquire("bob", limits).Rate(); got != 2000 {
		t.Fatalf("a new user's rate is %d, want the 2000 in force", got)
	}
}

// TestUserRateOfAnAllocationEndedBeforeItsCreated: an allocation that
// ends before its Created event (a Close between its insert and the
// event) takes no share of its user's rate, so none is kept for a user
// without allocations; in the usual order the share is taken and given
// back; either way nothing is left of the allocation.
func TestUserRateOfAnAllocationEndedBeforeItsCreated(t *testing.T) {
	var u userRates
	var r allocRates
	early, usual := &allocation.Allocation{User: "alice"}, &allocation.Allocation{User: "bob"}
	acquire := func(a *allocation.Allocation) func() { return func() { u.acquire(a.User, limitsOf(1000)) } }
	release := func(a *allocation.Allocation) func() { return func() { u.release(a.User) } }

	r.ended(early, release(early))
	if r.created(early, acquire(early)) {
		t.Error("an allocation already ended took a share of its user's rate")
	}
	if !r.created(usual, acquire(usual)) || u.get("bob") == nil {
		t.Fatal("a new allocation took no share of its user's rate")
	}
	r.ended(usual, release(usual))
	if len(u.m) != 0 || len(r.seen) != 0 {
		t.Fatalf("kept %d users' rates and %d allocations after every allocation ended", len(u.m), len(r.seen))
	}
}
