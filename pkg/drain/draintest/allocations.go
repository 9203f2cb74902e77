package draintest

import (
	"sync"

	"github.com/turnd/turnd/pkg/drain"
)

// FakeAllocations is a drain.Allocations whose count the test sets. Its zero
// value is a count of 0, ready to use; it is safe for concurrent use.
type FakeAllocations struct {
	mu      sync.Mutex
	n       int
	changed chan struct{}
	stopped bool
}

var _ drain.Allocations = (*FakeAllocations)(nil)

// NewFakeAllocations returns a counter starting at n.
func NewFakeAllocations(n int) *FakeAllocations {
	return &FakeAllocations{n: n}
}

// Count returns the current count.
func (a *FakeAllocations) Count() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.n
}

// Changed returns the channel notified (coalesced, buffer of one) after every
// change of the count.
func (a *FakeAllocations) Changed() <-chan struct{} {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.chanLocked()
}

// StopAdmitting records that the drain refuses new allocations and returns
// the count.
func (a *FakeAllocations) StopAdmitting() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.stopped = true
	return a.n
}

// Admitting reports whether StopAdmitting has not been called.
func (a *FakeAllocations) Admitting() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return !a.stopped
}

// Set sets the count to n and notifies if it changed.
func (a *FakeAllocations) Set(n int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.setLocked(n)
}

// Add changes the count by delta and notifies if it changed.
func (a *FakeAllocations) Add(delta int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.setLocked(a.n + delta)
}

func (a *FakeAllocations) setLocked(n int) {
	if n == a.n {
		return
	}
	a.n = n
	select {
	case a.chanLocked() <- struct{}{}:
	default: // a notification is already queued; it covers this change too
	}
}

func (a *FakeAllocations) chanLocked() chan struct{} {
	if a.changed == nil {
		a.changed = make(chan struct{}, 1)
	}
	return a.changed
}
