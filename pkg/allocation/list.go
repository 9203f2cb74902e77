package allocation

import (
	"slices"

	"github.com/turnd/turnd/internal/netaddr"
)

// List returns the live allocations of user (every user if empty), oldest
// first, and with equal start times in a stable order, so pages of it follow
// on from each other.
func (r *Registry) List(user string) []Info {
	r.mu.Lock()
	out := make([]Info, 0, len(r.live))
	for _, info := range r.live {
		if user == "" || info.User == user {
			out = append(out, info)
		}
	}
	r.mu.Unlock()
	slices.SortFunc(out, func(a, b Info) int {
		if c := a.Created.Compare(b.Created); c != 0 {
			return c
		}
		return netaddr.AddrPort(a.Relay).Compare(netaddr.AddrPort(b.Relay))
	})
	return out
}

// MarkAllEnding is MarkEnding for every live allocation.
func (r *Registry) MarkAllEnding(reason string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for k, info := range r.live {
		if info.Ending == "" {
			info.Ending = reason
			r.live[k] = info
		}
	}
}

// RemoveAll forgets every live allocation and returns them, for a server
// that closes them all without pion reporting each one.
func (r *Registry) RemoveAll() []Info {
	r.mu.Lock()
	out := make([]Info, 0, len(r.live))
	for k, info := range r.live {
		out = append(out, info)
		delete(r.live, k)
		r.forget(info)
	}
	r.count.Store(0)
	r.mu.Unlock()
	if len(out) > 0 {
		r.notify()
	}
	return out
}
