package allocation

import (
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/turnd/turnd/internal/clientip"
	"github.com/turnd/turnd/internal/netaddr"
	"github.com/turnd/turnd/internal/traffic"
)

// Info describes one live allocation.
type Info struct {
	Client net.Addr // the client's transport address (5-tuple source); a copy of its own
	// KeyedBy is the address object pion keyed the allocation by, to be
	// compared (is a report about this object?), never read: the relay
	// rewrites it once the allocation is gone (relay/retire.go).
	KeyedBy   net.Addr
	Server    net.Addr  // turnd's listening address the client reached (5-tuple destination)
	Transport Transport // client-facing transport
	User      string    // user ID from the credential check (REST: the part after the expiry)
	Realm     string
	Relay     net.Addr // relayed transport address
	Created   time.Time
	// Expires is when the allocation ends unless the client refreshes it:
	// creation or the last Refresh plus the lifetime granted. Zero until
	// the first grant is known (Extend).
	Expires time.Time
	// Ending is why the allocation is ending, once turnd knows it before
	// pion reports the deletion (MarkEnding); empty until then.
	Ending string

	// Tuple, Relayed and Usage are filled by Table (not Registry): the
	// 5-tuple, both relayed addresses (index bindings.Families.Index; zero:
	// none) and the traffic so far.
	Tuple   netaddr.FiveTuple
	Relayed [2]netip.AddrPort
	Usage   traffic.Usage
}

// Limits are the allocation quotas; zero means unlimited.
type Limits struct {
	Total   int
	PerUser int
	PerIP   int // per client address: an IPv4 address, an IPv6 /64 (clientip.Key)
	// PerPrefix is per client network, an IPv4 /24 or IPv6 /48
	// (clientip.PrefixKey), so that one network's many hosts cannot hold
	// every relay port between them.
	PerPrefix int
}

// Registry mirrors pion's allocation tables. It is safe for concurrent use;
// Add and Remove are called from pion callbacks that may hold pion's locks,
// so they never block beyond a short mutex section.
type Registry struct {
	mu          sync.Mutex
	live        map[netaddr.FiveTuple]Info
	perUser     map[string]int
	clients     clientip.Counts // per client address and per network
	byTransport [numTransports]int

	count   atomic.Int64
	limits  atomic.Pointer[Limits]
	changed chan struct{}
}

// NewRegistry returns an empty registry with the given quotas.
func NewRegistry(l Limits) *Registry {
	r := &Registry{
		live:    make(map[netaddr.FiveTuple]Info),
		perUser: make(map[string]int),
		changed: make(chan struct{}, 1),
	}
	r.SetLimits(l)
	return r
}

// SetLimits replaces the quotas; live allocations are never revoked by it.
func (r *Registry) SetLimits(l Limits) { r.limits.Store(&l) }

// Admit reports whether user, from the client IP address ip, may create one
// more allocation under the quotas.
// The check and the later Add are not atomic (pion creates the allocation in
// between), so concurrent Allocates of one user can overshoot by the number
// in flight; quotas are a guard against abuse, not an exact ledger.
func (r *Registry) Admit(user string, ip netip.Addr) error {
	l := r.limits.Load()
	if l.Total > 0 && int(r.count.Load()) >= l.Total {
		return ErrTotalQuota
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case l.PerUser > 0 && r.perUser[user] >= l.PerUser:
		return ErrUserQuota
	case l.PerIP > 0 && r.clients.Host(ip) >= l.PerIP:
		return ErrIPQuota
	case l.PerPrefix > 0 && r.clients.Network(ip) >= l.PerPrefix:
		return ErrPrefixQuota
	}
	return nil
}

// IPCount returns how many live allocations clients at ip hold; for IPv6,
// clients anywhere in ip's /64.
func (r *Registry) IPCount(ip netip.Addr) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.clients.Host(ip)
}

// PrefixCount returns how many live allocations clients in ip's network
// (clientip.PrefixKey) hold.
func (r *Registry) PrefixCount(ip netip.Addr) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.clients.Network(ip)
}

// Add records a new allocation. A second Add for the same 5-tuple replaces
// the first without changing the counts, and returns it (replaced true), so
// the caller can let go of what it held for it.
func (r *Registry) Add(info Info) (old Info, replaced bool) {
	k := netaddr.Of(info.Client, info.Server)
	r.mu.Lock()
	if old, replaced = r.live[k]; replaced {
		r.forget(old)
	}
	r.live[k] = info
	r.perUser[info.User]++
	r.clients.Add(netaddr.IP(info.Client))
	if info.Transport < numTransports {
		r.byTransport[info.Transport]++
	}
	r.count.Store(int64(len(r.live)))
	r.mu.Unlock()
	r.notify()
	return old, replaced
}

// Remove forgets the allocation of a 5-tuple and returns what it was.
func (r *Registry) Remove(client, server net.Addr) (Info, bool) {
	k := netaddr.Of(client, server)
	r.mu.Lock()
	info, ok := r.live[k]
	if ok {
		delete(r.live, k)
		r.forget(info)
		r.count.Store(int64(len(r.live)))
	}
	r.mu.Unlock()
	if ok {
		r.notify()
	}
	return info, ok
}

// forget undoes the per-user, per-address and per-transport counts of
// info; r.mu is held.
func (r *Registry) forget(info Info) {
	if n := r.perUser[info.User] - 1; n > 0 {
		r.perUser[info.User] = n
	} else {
		delete(r.perUser, info.User)
	}
	r.clients.Remove(netaddr.IP(info.Client))
	if info.Transport < numTransports {
		r.byTransport[info.Transport]--
	}
}

// notify wakes the watcher without ever blocking: the channel holds one
// pending wake-up, and a reader always re-reads Count.
func (r *Registry) notify() {
	select {
	case r.changed <- struct{}{}:
	default:
	}
}

// Has reports whether the 5-tuple (client, server) holds an allocation.
func (r *Registry) Has(client, server net.Addr) bool {
	k := netaddr.Of(client, server)
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.live[k]
	return ok
}

// User returns the user ID that holds the 5-tuple's allocation.
func (r *Registry) User(client, server net.Addr) (string, bool) {
	k := netaddr.Of(client, server)
	r.mu.Lock()
	defer r.mu.Unlock()
	info, ok := r.live[k]
	return info.User, ok
}

// MarkEnding records why the 5-tuple's allocation is about to end, for its
// usage record; the first reason given stands. It reports whether the
// allocation is live.
func (r *Registry) MarkEnding(client, server net.Addr, reason string) bool {
	k := netaddr.Of(client, server)
	r.mu.Lock()
	defer r.mu.Unlock()
	info, ok := r.live[k]
	if ok && info.Ending == "" {
		info.Ending = reason
		r.live[k] = info
	}
	return ok
}

// Count returns the number of live allocations.
func (r *Registry) Count() int { return int(r.count.Load()) }

// Changed delivers a coalesced notification after every change of Count.
// It is meant for a single watcher (the drain).
func (r *Registry) Changed() <-chan struct{} { return r.changed }

// UserCount returns how many live allocations user holds.
func (r *Registry) UserCount(user string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.perUser[user]
}

// ByTransport returns the live allocation count of each transport.
func (r *Registry) ByTransport() map[Transport]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[Transport]int, numTransports)
	for _, t := range Transports() {
		out[t] = r.byTransport[t]
	}
	return out
}
