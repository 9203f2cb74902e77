package gate

import (
	"sync"
	"time"
)

// maxPending bounds the hand-over tables below. An entry normally lives for
// the microseconds between the gate and pion's handling of the same packet,
// but a request pion then refuses (quota, stale nonce) leaves its entry
// behind. Past the bound the oldest entry leaves, never the whole table: a
// client flooding refused requests must not drop another client's entry
// that is waiting for pion.
const maxPending = 4096

// pendingTTL is how long an entry waits to be taken. Its request is handled
// within milliseconds; an older entry was left by a refused request, and
// must not be applied to a later request of the same client.
const pendingTTL = 5 * time.Second

// pending is a small bounded hand-over table from the gate to a later stage
// of the same request. Entries leave when taken, when they expire, or, the
// table being full, oldest first.
type pending[K comparable, V any] struct {
	mu  sync.Mutex
	now func() time.Time // nil: time.Now
	m   map[K]pendingEntry[V]
	// order lists the puts, oldest first, from head on; a slot whose entry
	// was taken or put again stays until it reaches the head.
	order []pendingSlot[K]
	head  int
	seq   uint64
}

type pendingEntry[V any] struct {
	v   V
	at  time.Time
	seq uint64
}

type pendingSlot[K comparable] struct {
	k   K
	seq uint64
}

func (p *pending[K, V]) clock() time.Time {
	if p.now != nil {
		return p.now()
	}
	return time.Now()
}

func (p *pending[K, V]) put(k K, v V) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.clock()
	if p.m == nil {
		p.m = make(map[K]pendingEntry[V])
	}
	for p.head < len(p.order) {
		s := p.order[p.head]
		e, ok := p.m[s.k]
		live := ok && e.seq == s.seq
		if live && now.Sub(e.at) < pendingTTL && len(p.order)-p.head < maxPending {
			break // the oldest put is waiting for pion and there is room
		}
		if live {
			delete(p.m, s.k)
		}
		p.pop()
	}
	p.seq++
	p.m[k] = pendingEntry[V]{v: v, at: now, seq: p.seq}
	p.order = append(p.order, pendingSlot[K]{k: k, seq: p.seq})
}

// pop drops the head slot, and moves the rest to the front once half the
// slice is dropped slots, so the slice stays within twice the bound.
func (p *pending[K, V]) pop() {
	p.order[p.head] = pendingSlot[K]{}
	p.head++
	if p.head == len(p.order) {
		p.order, p.head = p.order[:0], 0
	} else if p.head >= len(p.order)/2 {
		n := copy(p.order, p.order[p.head:])
		clear(p.order[n:])
		p.order, p.head = p.order[:n], 0
	}
}

func (p *pending[K, V]) take(k K) (V, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	e, ok := p.m[k]
	if !ok {
		var zero V
		return zero, false
	}
	delete(p.m, k)
	if p.clock().Sub(e.at) >= pendingTTL {
		var zero V
		return zero, false
	}
	return e.v, true
}

func (p *pending[K, V]) size() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.m)
}
