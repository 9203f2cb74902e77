package edge

import (
	"context"
	"sync"
	"sync/atomic"
)

// outboxSize bounds what one stream client may have waiting to be written:
// answers its socket could not take at once, or, for TLS, every message
// (a crypto/tls write can block, and no loop may wait for one client).
const outboxSize = 64 << 10

// outbox is a byte ring of whole messages, written by its connection's
// one flusher in order. Put never waits: what does not fit is dropped.
// The ring is allocated on first use: most plain TCP connections never
// need it.
type outbox struct {
	mu       sync.Mutex
	buf      []byte
	head, n  int
	flushing bool          // a flusher owns the ring's front
	active   atomic.Bool   // flushing, for a look without the lock
	wake     chan struct{} // to a parked flusher: bytes
	empty    chan struct{} // closed when the ring empties (waitEmpty); nil: nobody waits
	done     chan struct{} // closed when the connection is torn down
}

func newOutbox() outbox {
	return outbox{wake: make(chan struct{}, 1), done: make(chan struct{})}
}

// putLocked copies frames into the ring, all or none. Called with mu held.
//
// Hot path (TLS downlink): no allocation once the ring exists.
func (o *outbox) putLocked(frames [][]byte) bool {
	total := 0
	for _, f := range frames {
		total += len(f)
	}
	if o.buf == nil {
		o.buf = make([]byte, outboxSize)
	}
	if total > len(o.buf)-o.n {
		return false
	}
	for _, f := range frames {
		for len(f) > 0 {
			at, end := (o.head+o.n)%len(o.buf), len(o.buf)
			if at < o.head { // wrapped: never past the unread front
				end = o.head
			}
			k := copy(o.buf[at:end], f)
			o.n += k
			f = f[k:]
		}
	}
	select {
	case o.wake <- struct{}{}:
	default:
	}
	return true
}

// put is putLocked taking the lock.
func (o *outbox) put(frames [][]byte) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.putLocked(frames)
}

// front returns the ring's contiguous unread front; empty when the ring is.
func (o *outbox) front() []byte {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.n == 0 {
		return nil
	}
	return o.buf[o.head:min(len(o.buf), o.head+o.n)]
}

// consume frees k written bytes of the front and reports whether the ring
// is now empty.
func (o *outbox) consume(k int) (empty bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.head = (o.head + k) % len(o.buf)
	o.n -= k
	if o.n > 0 {
		return false
	}
	o.head = 0
	if o.empty != nil {
		close(o.empty)
		o.empty = nil
	}
	return true
}

// waitEmpty waits until the ring is empty, the connection is gone or ctx
// ends (its error).
func (o *outbox) waitEmpty(ctx context.Context) error {
	o.mu.Lock()
	if o.n == 0 {
		o.mu.Unlock()
		return nil
	}
	if o.empty == nil {
		o.empty = make(chan struct{})
	}
	empty := o.empty
	o.mu.Unlock()
	select {
	case <-empty:
	case <-o.done:
	case <-ctx.Done():
		return ctx.Err()
	}
	return nil
}

// startLocked marks a flusher as running and reports whether the caller
// must start one. Called with mu held.
func (o *outbox) startLocked() bool {
	if o.flushing {
		return false
	}
	o.flushing = true
	o.active.Store(true)
	return true
}

// flush writes the ring with write until it is empty, then returns (not
// persistent: its job is done) or waits for more (persistent) until the
// connection is gone or stopped closes and the ring is empty. A write
// error ends it: the connection is broken, and the caller ends it.
func (o *outbox) flush(write func([]byte) (int, error), persistent bool, stopped <-chan struct{}) error {
	for {
		if b := o.front(); len(b) > 0 {
			n, err := write(b)
			if n > 0 {
				o.consume(n)
			}
			if err != nil {
				return err
			}
			continue
		}
		if persistent {
			select {
			case <-o.wake:
				continue
			case <-o.done:
				return nil
			case <-stopped:
			}
		}
		o.mu.Lock()
		if o.n == 0 {
			o.flushing = false
			o.active.Store(false)
			o.mu.Unlock()
			return nil
		}
		o.mu.Unlock()
	}
}
