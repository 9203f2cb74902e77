package allocation

import (
	"cmp"
	"net"
	"net/netip"
	"slices"

	"github.com/turnd/turnd/internal/traffic"
)

// List returns the live allocations of user (every user if empty), oldest
// first, and with equal start times in a stable order (by relayed
// address), so pages of it follow on from each other.
func (t *Table) List(user string) []Info {
	t.mu.Lock()
	out := make([]Info, 0, len(t.byTuple))
	routes := make([]*Allocation, 0, len(t.byTuple))
	for _, a := range t.byTuple {
		if user == "" || a.User == user {
			out = append(out, a.info())
			routes = append(routes, a)
		}
	}
	t.mu.Unlock()
	for i, a := range routes { // the tally is atomics: read outside the lock
		out[i].Usage = addUsage(a.Route.Usage.Usage(), &out[i].Usage)
	}
	slices.SortFunc(out, func(a, b Info) int {
		if c := a.Created.Compare(b.Created); c != 0 {
			return c
		}
		return firstRelayed(a).Compare(firstRelayed(b))
	})
	return out
}

func firstRelayed(i Info) netip.AddrPort {
	if i.Relayed[0].IsValid() {
		return i.Relayed[0]
	}
	return i.Relayed[1]
}

// info describes a for reports (/sessions, usage records); the lock is held.
func (a *Allocation) info() Info {
	i := Info{
		Tuple: a.Tuple, Transport: a.Transport, User: a.User, Realm: a.Realm, Created: a.Created,
		Expires: a.deadline(), Ending: a.ending.String(),
		Relayed: [2]netip.AddrPort{a.relayed[0].addr, a.relayed[1].addr},
		Usage:   addUsage(traffic.Usage{}, a.carried), // the route's tally is added outside the lock
	}
	i.Client, i.Server = addr(a.Tuple.Client, a.Tuple.TCP), addr(a.Tuple.Server, a.Tuple.TCP)
	i.Relay = addr(firstRelayed(i), a.PeerTCP)
	return i
}

// addr is ap as the net.Addr of its transport; nil when zero.
func addr(ap netip.AddrPort, tcp bool) net.Addr {
	if !ap.IsValid() {
		return nil
	}
	if tcp {
		return net.TCPAddrFromAddrPort(ap)
	}
	return net.UDPAddrFromAddrPort(ap)
}

// Expiry summarises the live allocations' creation and expiry times (an
// allocation's expiry is its last family's). It walks every allocation,
// so it is for reports, not for a per-packet path.
func (t *Table) Expiry() Expiry {
	t.mu.Lock()
	defer t.mu.Unlock()
	var e Expiry
	for _, a := range t.byTuple {
		if e.Oldest.IsZero() || a.Created.Before(e.Oldest) {
			e.Oldest = a.Created
		}
		end := a.deadline()
		if e.Next.IsZero() || end.Before(e.Next) {
			e.Next = end
		}
		if end.After(e.Last) {
			e.Last = end
		}
	}
	return e
}

// Allocations returns every live allocation, oldest first (then by
// 5-tuple): for a relay adopting a restored table's sockets, or a server
// closing them all.
func (t *Table) Allocations() []*Allocation {
	t.mu.Lock()
	all := make([]*Allocation, 0, len(t.byTuple))
	for _, a := range t.byTuple {
		all = append(all, a)
	}
	t.mu.Unlock()
	slices.SortFunc(all, func(x, y *Allocation) int { // fixed fields: no lock needed
		return cmp.Or(x.Created.Compare(y.Created), x.Tuple.Client.Compare(y.Tuple.Client),
			x.Tuple.Server.Compare(y.Tuple.Server), cmp.Compare(x.Transport, y.Transport))
	})
	return all
}
