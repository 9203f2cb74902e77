package ratelimit

import (
	"sync"
	"sync/atomic"
	"time"
)

// maxPerShard bounds the memory a flood of keys can claim: past it, full
// buckets (keys quiet for a while) are forgotten, and if that is not enough
// the shard starts over — which errs on the side of letting through.
const maxPerShard = 4096

const shards = 16

// buckets is a set of token buckets by key, sharded so that keys on
// different shards do not wait for each other. The zero rate means
// unlimited.
type buckets[K comparable] struct {
	rate   atomic.Int64 // tokens per second
	burst  atomic.Int64 // tokens a quiet key may spend at once
	now    func() time.Time
	shard  func(K) int // in [0, shards)
	shards [shards]shard[K]
}

type shard[K comparable] struct {
	mu sync.Mutex
	m  map[K]bucket
}

type bucket struct {
	tokens float64
	last   time.Time
}

func (b *buckets[K]) init(rate int, now func() time.Time, shardOf func(K) int) {
	if now == nil {
		now = time.Now
	}
	b.now, b.shard = now, shardOf
	b.setRate(rate, 2*rate)
}

// setRate sets the rate and the burst, which is at least one token.
func (b *buckets[K]) setRate(rate, burst int) {
	b.burst.Store(int64(max(burst, 1)))
	b.rate.Store(int64(max(rate, 0)))
}

// take spends one token of k and reports whether there was one.
func (b *buckets[K]) take(k K) bool {
	rate := float64(b.rate.Load())
	if rate == 0 {
		return true
	}
	burst := float64(b.burst.Load())
	now := b.now()
	s := &b.shards[b.shard(k)]
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = make(map[K]bucket)
	}
	bk, ok := s.m[k]
	if !ok {
		if len(s.m) >= maxPerShard {
			s.sweep(now, rate, burst)
		}
		bk = bucket{tokens: burst, last: now}
	}
	bk.tokens = min(burst, bk.tokens+now.Sub(bk.last).Seconds()*rate)
	bk.last = now
	allowed := bk.tokens >= 1
	if allowed {
		bk.tokens--
	}
	s.m[k] = bk
	return allowed
}

// sweep forgets buckets that have refilled; s.mu is held.
func (s *shard[K]) sweep(now time.Time, rate, burst float64) {
	for k, b := range s.m {
		if b.tokens+now.Sub(b.last).Seconds()*rate >= burst {
			delete(s.m, k)
		}
	}
	if len(s.m) >= maxPerShard {
		clear(s.m)
	}
}

// tracked returns how many keys have a bucket.
func (b *buckets[K]) tracked() int {
	n := 0
	for i := range b.shards {
		s := &b.shards[i]
		s.mu.Lock()
		n += len(s.m)
		s.mu.Unlock()
	}
	return n
}
