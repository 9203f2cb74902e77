package allocation

import (
	"sync"
	"time"
)

// fakeClock is a Clock that moves only when the test advances it; every
// After call is reported on asked, so a test awaits Run's next sleep
// instead of sleeping itself.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	timers []fakeTimer
	asked  chan time.Duration
}

type fakeTimer struct {
	at time.Time
	c  chan time.Time
}

func newFakeClock(now time.Time) *fakeClock {
	return &fakeClock{now: now, asked: make(chan time.Duration, 64)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) After(d time.Duration) <-chan time.Time {
	ch := make(chan time.Time, 1)
	c.mu.Lock()
	c.timers = append(c.timers, fakeTimer{c.now.Add(d), ch})
	c.mu.Unlock()
	c.asked <- d
	return ch
}

// Advance moves the clock by d and fires the timers due by then.
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	kept := c.timers[:0]
	for _, t := range c.timers {
		if t.at.After(c.now) {
			kept = append(kept, t)
			continue
		}
		t.c <- c.now
	}
	c.timers = kept
}
