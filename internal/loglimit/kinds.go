package loglimit

import (
	"maps"
	"sync"
	"sync/atomic"
	"time"
)

// MaxKinds bounds the kinds a Kinds tells apart; past it new kinds share one
// limiter, so that kinds named by data cannot grow without bound.
const MaxKinds = 256

// Kinds is a Limiter per kind of line named by a string, for lines whose
// kinds are not known in advance (a library's format strings). Finding a
// known kind takes no lock: the table is copied when a kind is added, which
// happens at most MaxKinds times.
type Kinds struct {
	perSecond int
	now       func() time.Time
	table     atomic.Pointer[map[string]*Limiter]
	mu        sync.Mutex // serialises additions
	rest      *Limiter   // every kind past MaxKinds
}

// NewKinds returns a table of limiters of perSecond lines a second each on
// the clock now (nil: time.Now).
func NewKinds(perSecond int, now func() time.Time) *Kinds {
	k := &Kinds{perSecond: perSecond, now: now, rest: New(perSecond, now)}
	k.table.Store(&map[string]*Limiter{})
	return k
}

// Of returns the limiter of kind.
func (k *Kinds) Of(kind string) *Limiter {
	if l, ok := (*k.table.Load())[kind]; ok {
		return l
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	old := *k.table.Load()
	if l, ok := old[kind]; ok {
		return l
	}
	if len(old) >= MaxKinds {
		return k.rest
	}
	next := maps.Clone(old)
	l := New(k.perSecond, k.now)
	next[kind] = l
	k.table.Store(&next)
	return l
}
