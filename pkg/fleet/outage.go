package fleet

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// outage is whether Redis is usable. Any goroutine may find it down; only
// the heartbeat's probe brings it up again, after the node's counts are
// rebuilt, so no Admit runs against counts Redis may have lost.
type outage struct {
	up      atomic.Bool // read on every Admit without a lock
	mu      sync.Mutex
	err     error         // why it went down
	changed chan struct{} // closed and replaced on every transition
	downs   uint64
	closed  bool
}

func (o *outage) init() {
	o.up.Store(true)
	o.changed = make(chan struct{})
}

func (o *outage) isUp() bool { return o.up.Load() }

// down marks Redis unusable because of err; a no-op when already down or
// closed (a failing call during Close is not an outage).
func (o *outage) down(err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed || !o.up.Load() {
		return
	}
	o.up.Store(false)
	o.err = err
	o.downs++
	o.notifyLocked()
}

func (o *outage) setUp() {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.up.Load() {
		return
	}
	o.up.Store(true)
	o.err = nil
	o.notifyLocked()
}

func (o *outage) close() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.closed = true
}

// watch returns the current state and a channel closed at its next change.
func (o *outage) watch() (up bool, err error, changed <-chan struct{}) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.up.Load(), o.err, o.changed
}

func (o *outage) notifyLocked() {
	close(o.changed)
	o.changed = make(chan struct{})
}

// errOwnDeadline is the cause opContext gives an operation's own deadline,
// so that fail can tell it from the caller's.
var errOwnDeadline = errors.New("fleet operation deadline")

// opContext bounds one operation on Redis by d within parent, the caller's
// context (or the Client's own).
func opContext(parent context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeoutCause(parent, d, errOwnDeadline)
}

// callerEnded reports whether ctx (from opContext) ended because its
// parent did: a caller that gave up, even with a deadline shorter than the
// operation's, says nothing of Redis.
func callerEnded(ctx context.Context) bool {
	if d, ok := ctx.Deadline(); ok && !time.Now().Before(d) {
		// Due: the socket's deadline can report before the context's
		// timer has fired, and only the fired context has its cause.
		select {
		case <-ctx.Done():
		case <-time.After(time.Second): // a Context that breaks its contract
		}
	}
	return ctx.Err() != nil && !errors.Is(context.Cause(ctx), errOwnDeadline)
}

// fail marks the fleet down, unless ctx ended by its caller's doing
// (callerEnded), and returns err wrapped with what failed.
func (c *Client) fail(ctx context.Context, what string, err error) error {
	if callerEnded(ctx) {
		return fmt.Errorf("%s: %w", what, err)
	}
	c.state.down(err)
	return fmt.Errorf("%s: %w: %w", what, ErrUnavailable, err)
}

// probe asks Redis whether it is back. On success the node's counts are
// rebuilt and a beat is sent before the Client is up again.
func (c *Client) probe() error {
	ctx, cancel := opContext(c.ctx, c.opTimeout())
	defer cancel()
	if err := c.rdb.Ping(ctx).Err(); err != nil {
		return fmt.Errorf("probe redis: %w", err)
	}
	// Whatever Redis holds of this node may be stale or gone.
	c.counts.markDirty()
	c.revoked.markUnwritten()
	if err := c.beat(ctx); err != nil {
		return err
	}
	c.state.setUp()
	return nil
}
