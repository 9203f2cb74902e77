package allocation

import (
	"container/heap"
	"context"
	"time"

	"github.com/turnd/turnd/internal/bindings"
)

// Clock is the time Run reads: the wall clock in production (Wall), a
// fake one in tests.
type Clock interface {
	Now() time.Time
	After(d time.Duration) <-chan time.Time
}

// Wall is the system clock.
type Wall struct{}

// Now returns time.Now().
func (Wall) Now() time.Time { return time.Now() }

// After returns time.After(d).
func (Wall) After(d time.Duration) <-chan time.Time { return time.After(d) }

// Run calls Expire whenever the earliest deadline passes, on c, until ctx
// ends: the table's one timer. It wakes early when an earlier deadline
// arrives (Rescheduled).
func (t *Table) Run(ctx context.Context, c Clock) {
	for {
		select { // Expire below sees whatever this signal was for
		case <-t.rescheduled:
		default:
		}
		next := t.Expire(c.Now())
		var wake <-chan time.Time
		if !next.IsZero() {
			wake = c.After(next.Sub(c.Now()))
		}
		select {
		case <-ctx.Done():
			return
		case <-wake:
		case <-t.rescheduled:
		}
	}
}

// Expire does what every deadline passed by now requires (an allocation
// or one of its families ends, a permission or a channel expires, a
// channel's cool-down ends, an unused reservation or an unbound RFC 6062
// connection is dropped), calls the hooks, and returns the next deadline
// (zero: none). A deadline refreshed since its item was queued is pushed
// back at its new time.
func (t *Table) Expire(now time.Time) (next time.Time) {
	var after []func()
	t.mu.Lock()
	for len(t.due) > 0 && !t.due[0].at.After(now) {
		d := t.due[0]
		if at := t.deadlineOf(d); at.After(d.at) {
			d.at = at
			heap.Fix(&t.due, 0)
			continue
		}
		heap.Pop(&t.due)
		t.expire(d, now, &after)
	}
	if len(t.due) > 0 {
		next = t.due[0].at
	}
	t.waiting = next
	t.mu.Unlock()
	run(after)
	return next
}

// deadlineOf is the deadline d's entry holds now; t.mu is held.
func (t *Table) deadlineOf(d *due) time.Time {
	a := d.a
	switch d.kind {
	case dueFamily:
		return a.relayed[d.n].expires
	case duePermission:
		return a.perms[d.peer].expires
	case dueChannel:
		c := a.chans[uint16(d.n)]
		if c.cooling {
			return c.expires.Add(ChannelCooldown)
		}
		return c.expires
	case dueConnection:
		return a.conns[d.n].expires
	case dueReservation:
		return t.tokens[d.token].r.Expires
	}
	return d.at
}

// expire acts on a deadline that passed; d is out of the heap, t.mu is held.
func (t *Table) expire(d *due, now time.Time, after *[]func()) {
	a := d.a
	switch d.kind {
	case dueFamily:
		a.relayed[d.n].item = nil
		f := bindings.V4
		if d.n == 1 {
			f = bindings.V6
		}
		if a.families() == f {
			t.end(a, EndExpired, after)
		} else {
			t.dropFamily(a, f, after)
		}
	case duePermission:
		delete(a.perms, d.peer)
		a.publishPermissions()
	case dueChannel:
		c := a.chans[uint16(d.n)]
		c.item = nil
		if c.cooling {
			delete(a.chans, uint16(d.n))
			return
		}
		c.cooling = true
		a.publishChannels()
		t.schedule(&c.item, c.expires.Add(ChannelCooldown), *d)
	case dueConnection:
		t.expireConnection(a, d.n, after)
	case dueReservation:
		t.dropReservation(t.tokens[d.token], after)
	}
}
