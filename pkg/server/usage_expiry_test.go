package server_test

import (
	"sync"
	"testing"
	"time"

	"github.com/turnd/turnd/pkg/server"
)

// manualClock is the table's and the handlers' clock in a test: it moves
// only when Advance is called, which also wakes the table's expiry loop.
type manualClock struct {
	mu   sync.Mutex
	now  time.Time
	tick chan time.Time
}

func newManualClock() *manualClock {
	return &manualClock{now: time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC), tick: make(chan time.Time, 1)}
}

func (c *manualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// After fires at the next Advance, whatever d: the loop then looks again.
func (c *manualClock) After(time.Duration) <-chan time.Time { return c.tick }

func (c *manualClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	now := c.now
	c.mu.Unlock()
	select {
	case c.tick <- now:
	default:
	}
}

// TestUsageRecordOfAnExpiredAllocation: an allocation whose lifetime runs
// out on the table's clock ends with its usage record, reason expired.
func TestUsageRecordOfAnExpiredAllocation(t *testing.T) {
	clock := newManualClock()
	opts := testOptions()
	opts.Config.Limits.MaxLifetime = time.Second
	opts.Clock, opts.AllocateRateClock = clock, clock.Now
	records := usageLog(&opts)
	s := start(t, opts)
	dial(t, s, "udp").MustAllocate()
	clock.Advance(2 * time.Second)
	wantFields(t, nextRecord(t, records), map[string]any{"reason": server.EndExpired, "transport": "udp"})
}
