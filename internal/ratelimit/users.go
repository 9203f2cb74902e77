package ratelimit

import (
	"hash/maphash"
	"time"
)

// Users is a set of per-user token buckets, for what an authenticated user
// may ask for at a rate (Allocate requests): credentials say who is asking,
// so the bucket is the user's whatever address it comes from. The zero rate
// means unlimited. Safe for concurrent use.
type Users struct {
	b buckets[string]
}

// NewUsers returns a limiter allowing rate requests per second per user,
// with a burst of 2×rate. now is the clock (nil: time.Now).
func NewUsers(rate int, now func() time.Time) *Users {
	u := &Users{}
	seed := maphash.MakeSeed()
	u.b.init(rate, now, func(user string) int { return int(maphash.String(seed, user) % shards) })
	return u
}

// SetRate changes the rate and the burst for every user (a config reload);
// a rate of 0 turns limiting off, a burst of 0 is twice the rate.
func (u *Users) SetRate(rate, burst int) {
	if burst == 0 {
		burst = 2 * rate
	}
	u.b.setRate(rate, burst)
}

// Allow spends one token of user and reports whether there was one.
func (u *Users) Allow(user string) bool { return u.b.take(user) }

// Tracked returns how many users have a bucket (for tests).
func (u *Users) Tracked() int { return u.b.tracked() }
