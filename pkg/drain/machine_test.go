package drain_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/turnd/turnd/pkg/drain"
	"github.com/turnd/turnd/pkg/drain/draintest"
)

// TestAcceptingFlipsAtDelayEnd pins the flip to the exact nanosecond and checks
// the drain's times.
func TestAcceptingFlipsAtDelayEnd(t *testing.T) {
	const delay, timeout = 5 * time.Second, time.Minute
	h := newHarness(t, delay, timeout, 1)
	h.clock.Advance(time.Hour) // while serving, nothing is armed
	start := epoch.Add(time.Hour)

	h.send(drain.Terminate)
	s := h.next()
	if !s.Accepting || !s.Started.Equal(start) || !s.Deadline.Equal(start.Add(delay+timeout)) || s.Trigger != drain.Terminate {
		t.Fatalf("draining status %+v", s)
	}
	h.clock.Advance(delay - time.Nanosecond)
	if !h.m.Accepting() || !h.m.Status().Accepting {
		t.Fatal("refusing before the delay ended")
	}
	h.clock.Advance(time.Nanosecond)
	if s := h.next(); s.Accepting || s.Phase != drain.Draining {
		t.Fatalf("at delay end: %+v", s)
	}
	if h.m.Accepting() {
		t.Fatal("Accepting() still true after the flip was published")
	}
	// The deadline counts from the drain's start, not from the flip.
	h.clock.Advance(timeout - time.Nanosecond)
	h.allocs.Set(2)
	if s := h.next(); s.Allocations != 2 || s.Phase != drain.Draining {
		t.Fatalf("count change: %+v", s)
	}
	h.clock.Advance(time.Nanosecond)
	if s := h.next(); s.Phase != drain.Stopped {
		t.Fatalf("at deadline: %+v", s)
	}
	if r := h.wait(); r.Reason != drain.DeadlineExpired || r.Duration != delay+timeout || r.Remaining != 2 {
		t.Errorf("Result %+v", r)
	}
}

func TestRunTwiceReturnsFirstResult(t *testing.T) {
	h := newHarness(t, 0, time.Hour, 0)
	h.send(drain.Quit)
	first := h.wait()
	second := h.m.Run(context.Background(), nil)
	if first != second {
		t.Errorf("second Run = %+v, first %+v", second, first)
	}
}

func TestDefaults(t *testing.T) {
	// Nil Clock and Allocations: real time, and no allocations ever.
	m := drain.New(drain.Config{Delay: -time.Second, Timeout: time.Hour})
	signals := make(chan drain.Signal, 1)
	signals <- drain.Terminate
	ctx, cancel := context.WithTimeout(context.Background(), guard)
	defer cancel()
	r := m.Run(ctx, signals)
	if r.Reason != drain.Drained || r.Trigger != drain.Terminate || r.Remaining != 0 {
		t.Errorf("Result %+v", r)
	}
}

// TestSystemClockDeadline runs one drain on real time, with a deadline short
// enough to keep the test fast.
func TestSystemClockDeadline(t *testing.T) {
	allocs := draintest.NewFakeAllocations(1)
	m := drain.New(drain.Config{Timeout: 10 * time.Millisecond, Clock: drain.SystemClock(), Allocations: allocs})
	signals := make(chan drain.Signal, 1)
	signals <- drain.Terminate
	ctx, cancel := context.WithTimeout(context.Background(), guard)
	defer cancel()
	r := m.Run(ctx, signals)
	if r.Reason != drain.DeadlineExpired || r.Remaining != 1 || r.Duration < 10*time.Millisecond {
		t.Errorf("Result %+v", r)
	}
}

func TestStrings(t *testing.T) {
	tests := []struct{ got, want string }{
		{drain.Serving.String(), "serving"},
		{drain.Draining.String(), "draining"},
		{drain.Stopped.String(), "stopped"},
		{drain.Phase(9).String(), "phase(9)"},
		{drain.Drain.String(), "drain"},
		{drain.Terminate.String(), "terminate"},
		{drain.Quit.String(), "quit"},
		{drain.Signal(9).String(), "signal(9)"},
		{drain.Drained.String(), "drained"},
		{drain.DeadlineExpired.String(), "deadline"},
		{drain.Immediate.String(), "immediate"},
		{drain.Reason(9).String(), "reason(9)"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("got %q, want %q", tt.got, tt.want)
		}
	}
}

// BenchmarkAccepting guards the per-Allocate check: it must not allocate.
func BenchmarkAccepting(b *testing.B) {
	m := drain.New(drain.Config{Timeout: time.Hour})
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if !m.Accepting() {
				b.Fatal("not accepting")
			}
		}
	})
}

// TestLastReleaseRacesDeadline lets the last release and the deadline arrive
// together; whichever Run sees first, nothing is left to force, so the drain
// counts as drained.
func TestLastReleaseRacesDeadline(t *testing.T) {
	for range 20 {
		h := newHarness(t, 0, time.Minute, 1)
		h.send(drain.Terminate)
		h.next()
		h.allocs.Set(0)
		h.clock.Advance(time.Minute)
		if r := h.wait(); r.Reason != drain.Drained || r.Remaining != 0 || r.AtStart != 1 {
			t.Fatalf("Result %+v", r)
		}
	}
}

// silentAllocations never notifies, standing in for a notification still
// queued when the deadline fires.
type silentAllocations struct{ n atomic.Int64 }

func (a *silentAllocations) Count() int               { return int(a.n.Load()) }
func (a *silentAllocations) Changed() <-chan struct{} { return nil }
func (a *silentAllocations) StopAdmitting() int       { return a.Count() }

func TestDeadlineWithNothingLeftIsDrained(t *testing.T) {
	allocs := &silentAllocations{}
	allocs.n.Store(1)
	clock := draintest.NewFakeClock(epoch)
	m := drain.New(drain.Config{Timeout: time.Minute, Clock: clock, Allocations: allocs})
	signals := make(chan drain.Signal, 1)
	signals <- drain.Terminate
	ctx, cancel := context.WithTimeout(context.Background(), guard)
	defer cancel()
	done := make(chan drain.Result, 1)
	go func() { done <- m.Run(ctx, signals) }()
	if err := clock.WaitTimers(ctx, 1); err != nil {
		t.Fatal(err)
	}
	allocs.n.Store(0)
	clock.Advance(time.Minute)
	if r := <-done; r.Reason != drain.Drained || r.Remaining != 0 || r.AtStart != 1 || r.Duration != time.Minute {
		t.Errorf("Result %+v", r)
	}
}
