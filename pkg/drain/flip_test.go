package drain_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/turnd/turnd/pkg/drain"
	"github.com/turnd/turnd/pkg/drain/draintest"
)

// admissionRace is an allocation count that an Allocate races with: it
// records every count the machine takes while it still accepts, because an
// Allocate admitted right after such a count is missing from it, and a
// drain that ends on it closes an allocation that was just granted.
type admissionRace struct {
	*draintest.FakeAllocations
	m             atomic.Pointer[drain.Machine]
	countedOpen   atomic.Int32
	countedClosed atomic.Int32
}

func (a *admissionRace) Count() int {
	if m := a.m.Load(); m != nil && m.Accepting() {
		a.countedOpen.Add(1)
	} else {
		a.countedClosed.Add(1)
	}
	return a.FakeAllocations.Count()
}

// StopAdmitting is the count taken in the step that refuses: it is closed
// only if the machine says so first.
func (a *admissionRace) StopAdmitting() int {
	if m := a.m.Load(); m != nil && m.Accepting() {
		a.countedOpen.Add(1)
	} else {
		a.countedClosed.Add(1)
	}
	return a.FakeAllocations.StopAdmitting()
}

// TestDrainRefusesBeforeItCounts: whether the drain flips at its start, at
// the end of the lame-duck delay or stops at once, Accepting is false before
// the count the drain acts on is taken.
func TestDrainRefusesBeforeItCounts(t *testing.T) {
	for _, tc := range []struct {
		name           string
		delay, timeout time.Duration
	}{
		{"no delay", 0, time.Minute},
		{"after the delay", time.Second, time.Minute},
		{"timeout zero", 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := draintest.NewFakeClock(epoch)
			allocs := &admissionRace{FakeAllocations: draintest.NewFakeAllocations(0)}
			changes := make(chan drain.Status, 8)
			m := drain.New(drain.Config{Delay: tc.delay, Timeout: tc.timeout, Clock: clock, Allocations: allocs,
				OnChange: func(s drain.Status) { changes <- s }})
			allocs.m.Store(m)
			signals := make(chan drain.Signal, 1)
			done := make(chan drain.Result, 1)
			go func() { done <- m.Run(context.Background(), signals) }()
			signals <- drain.Terminate
			if tc.delay > 0 {
				select {
				case <-changes: // the lame duck has begun and armed its timer
				case <-time.After(guard):
					t.Fatal("the drain did not start")
				}
				clock.Advance(tc.delay)
			}
			select {
			case r := <-done:
				if r.Reason == drain.DeadlineExpired {
					t.Fatalf("result %+v", r)
				}
			case <-time.After(guard):
				t.Fatal("the drain of an idle server did not end")
			}
			if n := allocs.countedOpen.Load(); n > 0 && tc.delay == 0 {
				t.Fatalf("%d allocation counts taken while still accepting", n)
			}
			if allocs.countedClosed.Load() == 0 {
				t.Fatal("no allocation count taken after the flip")
			}
		})
	}
}
