package server_test

import (
	"slices"
	"testing"
	"time"

	"github.com/turnd/turnd/internal/testturn"
)

// TestAllocateChurnLimited: one client allocating and releasing in a loop
// (Allocate, Refresh 0) gets its burst of limits.user_allocate_rate, then a
// signed 486 Allocation Quota Reached, counted as "rate"; once its bucket
// refills it allocates again. The rate's clock stands still between the
// test's steps, so the counts are exact however slowly the test runs.
func TestAllocateChurnLimited(t *testing.T) {
	const rate = 5 // a burst of 10: the quota below it, and the client releases each allocation
	obs := &fakeObserver{}
	opts := testOptions()
	opts.Observer = obs
	opts.Config.Limits.UserAllocateRate, opts.Config.Limits.UserAllocations = rate, 2
	now, advance := stoppedClock()
	opts.AllocateRateClock = now
	s := start(t, opts)
	c := dial(t, s, "udp")

	cycles := 0
	for ; cycles < 100; cycles++ {
		resp := c.Allocate()
		if code := testturn.ErrorCode(resp); code != 0 {
			if code, reason := reasonOf(t, resp); code != 486 || reason != "Allocation Quota Reached" {
				t.Fatalf("cycle %d: %d %q, want 486 Allocation Quota Reached", cycles, code, reason)
			}
			if !c.Signed(resp) {
				t.Error("the 486 is not signed with the client's key")
			}
			break
		}
		if code := c.Refresh(0); code != 0 {
			t.Fatalf("cycle %d: Refresh(0) error %d", cycles, code)
		}
	}
	if cycles != 2*rate {
		t.Fatalf("%d cycles allowed, want the burst of %d", cycles, 2*rate)
	}
	if got := obs.Rejected(); !slices.Equal(got, []string{"rate"}) {
		t.Errorf("AllocationRejected calls %q, want one \"rate\"", got)
	}

	// A token comes back every 1/rate s, and one only.
	advance(time.Second / rate)
	if code := testturn.ErrorCode(c.Allocate()); code != 0 {
		t.Fatalf("Allocate after a token came back: %d", code)
	}
	if code := c.Refresh(0); code != 0 {
		t.Fatalf("Refresh(0) error %d", code)
	}
	if code := testturn.ErrorCode(c.Allocate()); code != 486 {
		t.Fatalf("second Allocate on one token: %d, want 486", code)
	}
}
