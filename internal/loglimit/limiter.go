package loglimit

import (
	"sync/atomic"
	"time"
)

// PerSecond is how many lines of one kind a limiter lets through each second.
const PerSecond = 10

// Limiter lets at most a fixed number of lines of one kind through in each
// second of its clock and counts the ones it holds back. It is safe for
// concurrent use; a line held back costs a clock read and two atomic
// operations: no lock, no allocation.
type Limiter struct {
	perSecond uint64
	now       func() time.Time
	// state is the current second (its low 32 bits) in the high half and
	// the lines let through in it in the low half, so one compare-and-swap
	// both starts a second and takes a line in it.
	state atomic.Uint64
	held  atomic.Int64 // lines held back since the last one let through
}

// New returns a limiter of perSecond lines a second on the clock now
// (nil: time.Now).
func New(perSecond int, now func() time.Time) *Limiter {
	if now == nil {
		now = time.Now
	}
	return &Limiter{perSecond: uint64(max(perSecond, 0)), now: now}
}

// Allow reports whether a line may be written now and, if so, how many were
// held back before it, for the line to say (Args). Call it before building
// the line's arguments, so that a line held back formats nothing.
func (l *Limiter) Allow() (suppressed int64, ok bool) {
	sec := uint64(uint32(l.now().Unix()))
	for {
		s := l.state.Load()
		used := s & 0xffffffff
		if s>>32 != sec {
			used = 0
		}
		if used >= l.perSecond {
			l.held.Add(1)
			return 0, false
		}
		if l.state.CompareAndSwap(s, sec<<32|(used+1)) {
			return l.held.Swap(0), true
		}
	}
}

// Held returns how many lines were held back since the last one let
// through: what the next line let through will report.
func (l *Limiter) Held() int64 { return l.held.Load() }

// Args returns a line's key-value args with suppressed=n added when lines
// were held back before it.
func Args(n int64, args ...any) []any {
	if n > 0 {
		return append(args, "suppressed", n)
	}
	return args
}
