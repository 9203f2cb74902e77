package ratelimit

import (
	"strconv"
	"testing"
	"time"
)

// TestUsersBurstThenRate: a user's burst is twice the rate, then the rate;
// another user has a bucket of its own, wherever the requests come from.
func TestUsersBurstThenRate(t *testing.T) {
	c := &clock{t: time.Unix(1000, 0)}
	u := NewUsers(5, c.now)
	for i := range 10 {
		if !u.Allow("alice") {
			t.Fatalf("request %d of the burst refused", i)
		}
	}
	if u.Allow("alice") {
		t.Fatal("request past the burst allowed")
	}
	if !u.Allow("bob") {
		t.Fatal("another user was limited")
	}
	c.t = c.t.Add(200 * time.Millisecond) // one token back at 5/s
	if !u.Allow("alice") || u.Allow("alice") {
		t.Fatal("refill is not 5 per second")
	}
	u.SetRate(0, 0)
	for range 100 {
		if !u.Allow("alice") {
			t.Fatal("zero rate limited")
		}
	}
}

func TestUsersMemoryIsBounded(t *testing.T) {
	c := &clock{t: time.Unix(1000, 0)}
	u := NewUsers(5, c.now)
	for i := range 200000 {
		u.Allow("user-" + strconv.Itoa(i))
	}
	if n := u.Tracked(); n > shards*maxPerShard {
		t.Fatalf("%d users tracked, bound is %d", n, shards*maxPerShard)
	}
}
