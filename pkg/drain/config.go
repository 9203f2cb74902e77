package drain

import "time"

// Allocations is the live allocation count the drain waits on.
type Allocations interface {
	// Count returns the number of live allocations. It must be safe to call
	// from Run's goroutine while allocations come and go.
	Count() int
	// Changed delivers a (coalesced) notification after every change of Count.
	Changed() <-chan struct{}
	// StopAdmitting refuses every allocation not yet admitted and returns
	// the count at that instant: refusal and count are one step, so an
	// Allocate admitted before it is counted and one after is refused.
	StopAdmitting() (live int)
}

// Config configures a Machine.
type Config struct {
	// Delay is the lame-duck period: readiness fails but allocations are
	// still accepted for this long. 0 (or negative) refuses them at once.
	Delay time.Duration
	// Timeout is, after Delay, how long to wait for allocations to end before
	// forcing. 0 (or negative) means no graceful period: Drain and Terminate
	// stop at once.
	Timeout time.Duration
	// Clock tells the time. Nil means SystemClock().
	Clock Clock
	// Allocations is the count the drain waits on. Nil means none ever exist.
	Allocations Allocations
	// OnChange is called from Run's goroutine after every status change
	// (phase change, accepting flip, allocation count change while draining).
	// It must not block.
	OnChange func(Status)
}

// noAllocations stands in for a nil Config.Allocations.
type noAllocations struct{}

func (noAllocations) Count() int               { return 0 }
func (noAllocations) Changed() <-chan struct{} { return nil }
func (noAllocations) StopAdmitting() int       { return 0 }
