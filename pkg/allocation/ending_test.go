package allocation

import (
	"testing"
	"time"
)

// TestCountHoldsUntilEndedReturns: an ended allocation is counted until
// its Ended hook (its relay closed, its usage record written) returns, so
// a drain that sees 0 loses no record by stopping the process; a hook that
// panics is taken out of the count too.
func TestCountHoldsUntilEndedReturns(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	tab := New(Limits{}, Hooks{Ended: func(a *Allocation, why EndReason) {
		if why == EndShutdown {
			panic("a hook's bug")
		}
		close(entered)
		<-release
	}})
	a := insert(t, tab, "alice", tuple(1), v4(50000), time.Minute)
	done := make(chan bool)
	go func() { done <- tab.End(a, EndReleased) }()
	<-entered
	if n := tab.Count(); n != 1 {
		t.Errorf("Count while Ended runs = %d, want 1", n)
	}
	if n := tab.StopAdmitting(); n != 1 {
		t.Errorf("StopAdmitting while Ended runs = %d, want 1", n)
	}
	if _, ok := tab.Get(a.Tuple); ok {
		t.Error("an ended allocation is still found by its 5-tuple")
	}
	close(release)
	if !<-done {
		t.Fatal("End did not end the allocation")
	}
	if n := tab.Count(); n != 0 {
		t.Fatalf("Count after Ended returned = %d, want 0", n)
	}

	b := insert(t, New(Limits{}, tab.hooks), "bob", tuple(2), v4(50002), time.Minute)
	func() {
		defer func() { _ = recover() }()
		b.t.End(b, EndShutdown)
	}()
	if n := b.t.Count(); n != 0 {
		t.Fatalf("Count after a panicking Ended = %d, want 0", n)
	}
}
