package allocation

import (
	"net"
	"time"

	"github.com/turnd/turnd/internal/netaddr"
)

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

// Extend records that the allocation of the 5-tuple (client, server) now
// ends at expires, as granted by an Allocate or Refresh. An unknown 5-tuple
// (a Refresh with lifetime 0 has already deleted it) is ignored.
func (r *Registry) Extend(client, server net.Addr, expires time.Time) {
	k := netaddr.Of(client, server)
	r.mu.Lock()
	defer r.mu.Unlock()
	if info, ok := r.live[k]; ok {
		info.Expires = expires
		r.live[k] = info
	}
}

// Expiry summarises the live allocations' creation and expiry times. It
// walks every allocation, so it is for reports (status, drain logs), not
// for a per-packet path.
func (r *Registry) Expiry() Expiry {
	r.mu.Lock()
	defer r.mu.Unlock()
	var e Expiry
	for _, info := range r.live {
		if e.Oldest.IsZero() || info.Created.Before(e.Oldest) {
			e.Oldest = info.Created
		}
		if info.Expires.IsZero() {
			continue
		}
		if e.Next.IsZero() || info.Expires.Before(e.Next) {
			e.Next = info.Expires
		}
		if info.Expires.After(e.Last) {
			e.Last = info.Expires
		}
	}
	return e
}
