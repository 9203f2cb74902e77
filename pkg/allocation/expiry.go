package allocation

import "time"

// Expiry summarises when live allocations were made and when they end if
// nobody refreshes them; what a drain waits for at most, short of its
// deadline. Zero times mean no live allocation (or none with a known grant).
type Expiry struct {
	// Oldest is the creation time of the oldest live allocation.
	Oldest time.Time
	// Next is the earliest expiry among live allocations.
	Next time.Time
	// Last is the latest expiry: with no refresh and no new allocation,
	// every allocation has ended by then.
	Last time.Time
}
