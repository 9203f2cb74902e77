package allocation

import (
	"fmt"
	"net/netip"
	"time"

	"github.com/turnd/turnd/internal/bindings"
	"github.com/turnd/turnd/internal/netaddr"
)

// Ticket is an admitted allocation's place in the quotas, booked by Admit
// until Insert fills it or Cancel gives it back. Use it once.
type Ticket struct {
	t *Table
	b *booking
}

// booking is what a ticket counted, so that the same is uncounted.
type booking struct {
	user string
	ip   netip.Addr
	tr   Transport
	used bool
}

// Admit checks the quotas for an Allocate over client transport tr (total, per user, per client address, per
// client network), counting live allocations and outstanding tickets, and
// books a place for one more allocation of user from ip in the same
// critical section: concurrent Allocates cannot overshoot a quota.
func (t *Table) Admit(user string, ip netip.Addr, tr Transport) (Ticket, error) {
	l := t.limits.Load()
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case !t.admitting.Load():
		return Ticket{}, ErrNotAdmitting
	case l.Total > 0 && len(t.byTuple)+t.admitted >= l.Total:
		return Ticket{}, ErrTotalQuota
	case l.PerUser > 0 && t.perUser[user] >= l.PerUser:
		return Ticket{}, ErrUserQuota
	case l.PerIP > 0 && t.clients.Host(ip) >= l.PerIP:
		return Ticket{}, ErrIPQuota
	case l.PerPrefix > 0 && t.clients.Network(ip) >= l.PerPrefix:
		return Ticket{}, ErrPrefixQuota
	}
	b := &booking{user: user, ip: ip.Unmap(), tr: tr}
	t.book(b)
	t.admitted++
	t.recount()
	return Ticket{t: t, b: b}, nil
}

// book counts b against its user and client; t.mu is held.
func (t *Table) book(b *booking) {
	t.perUser[b.user]++
	t.clients.Add(b.ip)
}

// unbook undoes book; t.mu is held.
func (t *Table) unbook(b *booking) {
	if n := t.perUser[b.user] - 1; n > 0 {
		t.perUser[b.user] = n
	} else {
		delete(t.perUser, b.user)
	}
	t.clients.Remove(b.ip)
}

// Cancel gives the ticket's place back (no relay address could be had, or
// the request failed after admission). Cancelling a used ticket does
// nothing.
func (k Ticket) Cancel() {
	if k.t == nil {
		return
	}
	t := k.t
	t.mu.Lock()
	defer t.mu.Unlock()
	if k.b.used {
		return
	}
	k.b.used = true
	t.unbook(k.b)
	t.admitted--
	t.recount()
}

// Insert makes a live allocation of a in the ticket's place: its relayed
// addresses (index bindings.Families.Index; a zero one is a family not
// allocated) live for lifetime from now. Fields of a above the line must
// be set (a.Route may be nil: Insert makes one); a.User must be the
// ticket's user, and a.Transport its transport. On an error the ticket stays unused, to be cancelled.
func (k Ticket) Insert(a *Allocation, relayed [2]netip.AddrPort, lifetime time.Duration, now time.Time) error {
	if k.t == nil {
		return ErrTicketUsed
	}
	t := k.t
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case k.b.used:
		return ErrTicketUsed
	case a.User != k.b.user || a.Transport != k.b.tr:
		return fmt.Errorf("insert allocation of %q over %v on a ticket of %q over %v: %w",
			a.User, a.Transport, k.b.user, k.b.tr, ErrTicketMismatch)
	case relayed[0] == (netip.AddrPort{}) && relayed[1] == (netip.AddrPort{}):
		return ErrNoRelayed
	}
	if _, ok := t.byTuple[a.Tuple]; ok {
		return ErrExists
	}
	for _, r := range relayed {
		if _, ok := t.byRelay[netaddr.Unmap(r)]; ok && r.IsValid() {
			return fmt.Errorf("insert relayed %v: %w", r, ErrRelayInUse)
		}
	}
	k.b.used = true
	t.admitted--
	a.t, a.book = t, k.b
	if a.Route == nil {
		a.Route = &bindings.Route{}
	}
	if a.Created.IsZero() {
		a.Created = now
	}
	for i, r := range relayed {
		if !r.IsValid() {
			continue
		}
		r = netaddr.Unmap(r)
		a.relayed[i] = relayAddr{addr: r, expires: now.Add(lifetime)}
		t.byRelay[r] = a
		t.schedule(&a.relayed[i].item, a.relayed[i].expires, due{kind: dueFamily, a: a, n: uint32(i)})
	}
	t.byTuple[a.Tuple] = a
	if k.b.tr < numTransports {
		t.byTransport[k.b.tr]++
	}
	t.recount()
	return nil
}
