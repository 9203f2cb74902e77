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
// refills it allocates again.
func TestAllocateChurnLimited(t *testing.T) {
	const rate = 5 // a burst of 10: the quota below it, and the client releases each allocation
	obs := &fakeObserver{}
	opts := testOptions()
	opts.Observer = obs
	opts.Config.Limits.UserAllocateRate, opts.Config.Limits.UserAllocations = rate, 2
	s := start(t, opts)
	c := dial(t, s, "udp")

	begin := time.Now()
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
	elapsed := time.Since(begin)
	if most := 2*rate + int(elapsed.Seconds()*rate) + 1; cycles < 2*rate || cycles > most {
		t.Fatalf("%d cycles allowed in %v, want from the burst of %d to %d", cycles, elapsed, 2*rate, most)
	}
	if got := obs.Rejected(); !slices.Equal(got, []string{"rate"}) {
		t.Errorf("AllocationRejected calls %q, want one \"rate\"", got)
	}

	// A token comes back every 1/rate s; poll a little faster than that.
	tick := time.NewTicker(time.Second / (2 * rate))
	defer tick.Stop()
	deadline := time.Now().Add(waitTimeout)
	for testturn.ErrorCode(c.Allocate()) != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("still refused %v after the burst", waitTimeout)
		}
		<-tick.C
	}
}
