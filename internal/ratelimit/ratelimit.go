// Package ratelimit keeps one token bucket per client address (an IPv4
// address, an IPv6 /64: see clientip), for the
// requests a TURN server answers before it knows who is asking: the first,
// unauthenticated leg of every transaction, STUN Binding, and requests whose
// credentials fail. Bounding them per source address bounds what one host
// (or one spoofed address) can make the server compute and send.
//
// It knows nothing about STUN or sockets: callers say which address spent a
// token.
package ratelimit

import (
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/turnd/turnd/internal/clientip"
)

// maxPerShard bounds the memory an address flood can claim: past it, full
// buckets (addresses quiet for a while) are forgotten, and if that is not
// enough the shard starts over — which errs on the side of letting through.
const maxPerShard = 4096

const shards = 16

// Limiter is a set of per-address token buckets. The zero rate means
// unlimited. Safe for concurrent use.
type Limiter struct {
	rate   atomic.Int64 // tokens per second; the burst is twice this
	now    func() time.Time
	shards [shards]shard
}

type shard struct {
	mu sync.Mutex
	m  map[netip.Addr]bucket
}

type bucket struct {
	tokens float64
	last   time.Time
}

// New returns a limiter allowing rate requests per second per address, with
// a burst of 2×rate. now is the clock (nil: time.Now).
func New(rate int, now func() time.Time) *Limiter {
	if now == nil {
		now = time.Now
	}
	l := &Limiter{now: now}
	l.SetRate(rate)
	return l
}

// SetRate changes the rate for every address (a config reload); 0 turns
// limiting off.
func (l *Limiter) SetRate(rate int) { l.rate.Store(int64(max(rate, 0))) }

// Allow spends one token of addr and reports whether there was one.
func (l *Limiter) Allow(addr netip.Addr) bool { return l.take(addr) }

// Charge spends one token of addr, for a request found to fail after it was
// let through (wrong credentials).
func (l *Limiter) Charge(addr netip.Addr) { l.take(addr) }

func (l *Limiter) take(addr netip.Addr) bool {
	rate := float64(l.rate.Load())
	if rate == 0 {
		return true
	}
	addr = clientip.Key(addr)
	burst := 2 * rate
	now := l.now()
	s := &l.shards[shardOf(addr)]
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = make(map[netip.Addr]bucket)
	}
	b, ok := s.m[addr]
	if !ok {
		if len(s.m) >= maxPerShard {
			s.sweep(now, rate, burst)
		}
		b = bucket{tokens: burst, last: now}
	}
	b.tokens = min(burst, b.tokens+now.Sub(b.last).Seconds()*rate)
	b.last = now
	allowed := b.tokens >= 1
	if allowed {
		b.tokens--
	}
	s.m[addr] = b
	return allowed
}

// sweep forgets buckets that have refilled; s.mu is held.
func (s *shard) sweep(now time.Time, rate, burst float64) {
	for a, b := range s.m {
		if b.tokens+now.Sub(b.last).Seconds()*rate >= burst {
			delete(s.m, a)
		}
	}
	if len(s.m) >= maxPerShard {
		clear(s.m)
	}
}

// Tracked returns how many addresses have a bucket (for tests and metrics).
func (l *Limiter) Tracked() int {
	n := 0
	for i := range l.shards {
		s := &l.shards[i]
		s.mu.Lock()
		n += len(s.m)
		s.mu.Unlock()
	}
	return n
}

func shardOf(a netip.Addr) int {
	b := a.As16()
	h := uint32(b[12])<<24 | uint32(b[13])<<16 | uint32(b[14])<<8 | uint32(b[15])
	h ^= uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
	h ^= uint32(b[4])<<24 | uint32(b[5])<<16 | uint32(b[6])<<8 | uint32(b[7]) // an IPv6 key's low half is zero
	return int((h * 2654435761) >> 28 % shards)
}
