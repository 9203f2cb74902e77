package allocation

import (
	"container/heap"
	"net/netip"
	"time"
)

// dueKind says which deadline a heap item stands for.
type dueKind uint8

const (
	dueFamily      dueKind = iota // a relayed address's lifetime; n: its family index
	duePermission                 // peer's permission
	dueChannel                    // channel n's binding, then its cool-down
	dueConnection                 // RFC 6062 peer connection n's bind deadline
	dueReservation                // token's reservation
)

// due is one deadline in the table's heap. Each deadline has one item at
// most; a refresh writes the later time into its entry only, and the item
// is pushed back when it surfaces (Expire), so a refresh costs no heap
// operation.
type due struct {
	at    time.Time
	kind  dueKind
	a     *Allocation
	n     uint32
	peer  netip.Addr
	token [8]byte
	index int // in the heap, for Fix and Remove
}

// deadlines is a min-heap of due items by time (container/heap).
type deadlines []*due

func (h deadlines) Len() int           { return len(h) }
func (h deadlines) Less(i, j int) bool { return h[i].at.Before(h[j].at) }
func (h deadlines) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}
func (h *deadlines) Push(x any) {
	d := x.(*due)
	d.index = len(*h)
	*h = append(*h, d)
}
func (h *deadlines) Pop() any {
	old := *h
	d := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	d.index = -1
	return d
}

// schedule makes sure an entry's deadline at is in the heap: its first
// item is pushed; an earlier time is fixed in place at once (the item
// would surface too late); a later one is left for Expire to find. t.mu
// is held.
func (t *Table) schedule(item **due, at time.Time, d due) {
	switch {
	case *item == nil:
		d.at = at
		p := &d
		heap.Push(&t.due, p)
		*item = p
		t.woke(p)
	case at.Before((*item).at):
		(*item).at = at
		heap.Fix(&t.due, (*item).index)
		t.woke(*item)
	}
}

// unschedule takes an entry's item out of the heap; t.mu is held.
func (t *Table) unschedule(item **due) {
	if *item != nil && (*item).index >= 0 {
		heap.Remove(&t.due, (*item).index)
	}
	*item = nil
}

// woke tells Run that d is now earlier than what it sleeps until; t.mu is held.
func (t *Table) woke(d *due) {
	if d.index != 0 || (!t.waiting.IsZero() && !d.at.Before(t.waiting)) {
		return
	}
	t.waiting = d.at
	select {
	case t.rescheduled <- struct{}{}:
	default:
	}
}

// Rescheduled delivers a coalesced notification when a deadline earlier
// than the one Expire last returned arrives: Run's cue to wake early.
func (t *Table) Rescheduled() <-chan struct{} { return t.rescheduled }
