package server

import "testing"

// TestUserRatesLiveWithTheUsersAllocations: a user's shared rate is one
// for all of the user's allocations and is forgotten with the last of
// them, so the table holds no user without allocations.
func TestUserRatesLiveWithTheUsersAllocations(t *testing.T) {
	var u userRates
	a, b := u.acquire("alice", 1000), u.acquire("alice", 1000)
	if a != b || u.get("alice") != a {
		t.Fatal("two allocations of one user got two rates")
	}
	if u.acquire("bob", 0) == a {
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
