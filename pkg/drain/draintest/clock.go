package draintest

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/turnd/turnd/pkg/drain"
)

// FakeClock is a drain.Clock whose time moves only when Advance is called.
// It is safe for concurrent use.
type FakeClock struct {
	mu      sync.Mutex
	now     time.Time
	pending []*fakeTimer
	// changed is closed and replaced whenever pending changes, so that
	// WaitTimers can wait without polling.
	changed chan struct{}
}

var _ drain.Clock = (*FakeClock)(nil)

// NewFakeClock returns a FakeClock reading start.
func NewFakeClock(start time.Time) *FakeClock {
	return &FakeClock{now: start, changed: make(chan struct{})}
}

// Now returns the fake time.
func (c *FakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// NewTimer returns a timer due d after the fake now. A timer with d <= 0
// fires at once, as time.NewTimer does.
func (c *FakeClock) NewTimer(d time.Duration) drain.Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &fakeTimer{clock: c, when: c.now.Add(d), ch: make(chan time.Time, 1)}
	if d <= 0 {
		t.ch <- c.now
		return t
	}
	c.pending = append(c.pending, t)
	c.notifyLocked()
	return t
}

// Advance moves the fake time forward by d and fires, in order of due time,
// every timer that is due. Firing is a buffered send, so Advance returns
// without waiting for anyone to receive.
func (c *FakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	slices.SortStableFunc(c.pending, func(a, b *fakeTimer) int { return a.when.Compare(b.when) })
	fired := 0
	for _, t := range c.pending {
		if t.when.After(c.now) {
			break
		}
		t.ch <- c.now
		fired++
	}
	if fired > 0 {
		c.pending = slices.Delete(c.pending, 0, fired)
		c.notifyLocked()
	}
}

// Pending returns the number of timers that have not fired or been stopped.
func (c *FakeClock) Pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.pending)
}

// WaitTimers blocks until at least n timers are pending, so that a test can
// Advance only once the code under test has armed its timers.
func (c *FakeClock) WaitTimers(ctx context.Context, n int) error {
	for {
		c.mu.Lock()
		have, changed := len(c.pending), c.changed
		c.mu.Unlock()
		if have >= n {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return fmt.Errorf("wait for %d timers (have %d): %w", n, have, ctx.Err())
		}
	}
}

func (c *FakeClock) notifyLocked() {
	close(c.changed)
	c.changed = make(chan struct{})
}

type fakeTimer struct {
	clock *FakeClock
	when  time.Time
	ch    chan time.Time
}

func (t *fakeTimer) C() <-chan time.Time { return t.ch }

// Stop removes the timer if it is still pending and reports whether it was.
func (t *fakeTimer) Stop() bool {
	c := t.clock
	c.mu.Lock()
	defer c.mu.Unlock()
	i := slices.Index(c.pending, t)
	if i < 0 {
		return false
	}
	c.pending = slices.Delete(c.pending, i, i+1)
	c.notifyLocked()
	return true
}
