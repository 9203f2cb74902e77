package draintest_test

import (
	"context"
	"testing"
	"time"

	"github.com/turnd/turnd/pkg/drain/draintest"
)

var epoch = time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)

func fired(c <-chan time.Time) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

func TestFakeClockFiresDueTimersInOrder(t *testing.T) {
	c := draintest.NewFakeClock(epoch)
	late := c.NewTimer(3 * time.Second)
	early := c.NewTimer(time.Second)
	stopped := c.NewTimer(2 * time.Second)
	if c.Pending() != 3 {
		t.Fatalf("Pending() = %d, want 3", c.Pending())
	}
	if !stopped.Stop() || stopped.Stop() {
		t.Error("Stop should report true once, then false")
	}

	c.Advance(time.Second - time.Nanosecond)
	if fired(early.C()) || fired(late.C()) {
		t.Fatal("a timer fired early")
	}
	c.Advance(time.Nanosecond)
	if !fired(early.C()) || fired(late.C()) {
		t.Fatal("want only the 1s timer at 1s")
	}
	if early.Stop() {
		t.Error("Stop of a fired timer reported true")
	}
	c.Advance(time.Hour)
	select {
	case at := <-late.C():
		if want := epoch.Add(time.Hour + time.Second); !at.Equal(want) {
			t.Errorf("fired with %v, want %v", at, want)
		}
	default:
		t.Fatal("the 3s timer did not fire")
	}
	if fired(stopped.C()) {
		t.Error("a stopped timer fired")
	}
	if c.Pending() != 0 || !c.Now().Equal(epoch.Add(time.Hour+time.Second)) {
		t.Errorf("Pending() = %d, Now() = %v", c.Pending(), c.Now())
	}
}

func TestFakeClockNonPositiveFiresAtOnce(t *testing.T) {
	c := draintest.NewFakeClock(epoch)
	for _, d := range []time.Duration{0, -time.Second} {
		if !fired(c.NewTimer(d).C()) {
			t.Errorf("NewTimer(%v) did not fire at once", d)
		}
	}
	if c.Pending() != 0 {
		t.Errorf("Pending() = %d, want 0", c.Pending())
	}
}

func TestFakeClockWaitTimers(t *testing.T) {
	c := draintest.NewFakeClock(epoch)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	done := make(chan error)
	go func() { done <- c.WaitTimers(ctx, 2) }()
	c.NewTimer(time.Second)
	c.NewTimer(time.Second)
	if err := <-done; err != nil {
		t.Fatal(err)
	}

	short, stop := context.WithCancel(context.Background())
	stop()
	if err := c.WaitTimers(short, 3); err == nil {
		t.Error("WaitTimers returned nil with a cancelled context")
	}
}

func TestFakeAllocations(t *testing.T) {
	var a draintest.FakeAllocations // the zero value is usable
	if a.Count() != 0 {
		t.Fatalf("zero value Count() = %d", a.Count())
	}
	a.Set(0)
	if notified(a.Changed()) {
		t.Error("notified without a change")
	}
	a.Set(3)
	a.Add(-1) // coalesced with the Set
	if !notified(a.Changed()) || notified(a.Changed()) {
		t.Error("want exactly one coalesced notification")
	}
	if a.Count() != 2 {
		t.Errorf("Count() = %d, want 2", a.Count())
	}
	if n := draintest.NewFakeAllocations(7).Count(); n != 7 {
		t.Errorf("NewFakeAllocations(7).Count() = %d", n)
	}
}

func notified(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}
