// Package ratelimit keeps token buckets for the requests a TURN server must
// bound by rate. Per client address (an IPv4 address, an IPv6 /64: see
// clientip), for the requests it answers before it knows who is asking: the
// first, unauthenticated leg of every transaction, STUN Binding, and
// requests whose credentials fail; bounding them per source address bounds
// what one host (or one spoofed address) can make the server compute and
// send. Per user (Users), for authenticated requests that cost the server
// work at any rate a client sends them (Allocate).
//
// It knows nothing about STUN or sockets: callers say which address or user
// spent a token.
package ratelimit

import (
	"net/netip"
	"time"

	"github.com/turnd/turnd/internal/clientip"
)

// Limiter is a set of per-address token buckets. The zero rate means
// unlimited. Safe for concurrent use.
type Limiter struct {
	b buckets[netip.Addr]
}

// New returns a limiter allowing rate requests per second per address, with
// a burst of 2×rate. now is the clock (nil: time.Now).
func New(rate int, now func() time.Time) *Limiter {
	l := &Limiter{}
	l.b.init(rate, now, shardOf)
	return l
}

// SetRate changes the rate for every address (a config reload); 0 turns
// limiting off.
func (l *Limiter) SetRate(rate int) { l.b.setRate(rate, 2*rate) }

// Allow spends one token of addr and reports whether there was one.
func (l *Limiter) Allow(addr netip.Addr) bool { return l.b.take(clientip.Key(addr)) }

// Charge spends one token of addr, for a request found to fail after it was
// let through (wrong credentials).
func (l *Limiter) Charge(addr netip.Addr) { l.b.take(clientip.Key(addr)) }

// Tracked returns how many addresses have a bucket (for tests and metrics).
func (l *Limiter) Tracked() int { return l.b.tracked() }

func shardOf(a netip.Addr) int {
	b := a.As16()
	h := uint32(b[12])<<24 | uint32(b[13])<<16 | uint32(b[14])<<8 | uint32(b[15])
	h ^= uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
	h ^= uint32(b[4])<<24 | uint32(b[5])<<16 | uint32(b[6])<<8 | uint32(b[7]) // an IPv6 key's low half is zero
	return int((h * 2654435761) >> 28 % shards)
}
