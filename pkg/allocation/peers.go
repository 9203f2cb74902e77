package allocation

import (
	"net/netip"
	"slices"
	"time"

	"github.com/turnd/turnd/internal/bindings"
	"github.com/turnd/turnd/internal/netaddr"
)

// The lifetimes the RFC fixes.
const (
	// PermissionLifetime is a permission's (RFC 8656 §9: 300 s).
	PermissionLifetime = 300 * time.Second
	// ChannelLifetime is a channel binding's (RFC 8656 §12: 10 minutes).
	ChannelLifetime = 600 * time.Second
	// ChannelCooldown is how long an expired binding's number and peer stay
	// each other's (RFC 8656 §12.2: a client waits 5 minutes before binding
	// either to another), so that ChannelData still in flight for the old
	// peer never reaches a new one.
	ChannelCooldown = 5 * time.Minute
)

func (l *Limits) permissionLifetime() time.Duration {
	if l.PermissionLifetime > 0 {
		return l.PermissionLifetime
	}
	return PermissionLifetime
}

func (l *Limits) channelLifetime() time.Duration {
	if l.ChannelLifetime > 0 {
		return l.ChannelLifetime
	}
	return ChannelLifetime
}

// Permit installs or refreshes a permission for each of peers, for the
// permission lifetime (Limits) from now (RFC 8656 §10.2): all of them, or, when a
// peer is of a family a has no relayed address of (ErrFamilyMismatch) or
// the new ones would take a past max permissions (ErrPermissionQuota; 0:
// no cap), none.
func (t *Table) Permit(a *Allocation, peers []netip.Addr, now time.Time, max int) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if a.ending != 0 || a.t != t {
		return ErrGone
	}
	fams, fresh := a.families(), 0
	for i, p := range peers {
		p = p.Unmap()
		if !fams.Has(bindings.Of(p)) {
			return ErrFamilyMismatch
		}
		if a.permission(p) == nil && !seen(peers[:i], p) {
			fresh++
		}
		// Refused as soon as the cap is passed: seen is linear, and a
		// request may carry thousands of peers.
		if max > 0 && len(a.perms)+fresh > max {
			return ErrPermissionQuota
		}
	}
	for _, p := range peers {
		t.permit(a, p.Unmap(), now)
	}
	a.publishPermissions()
	return nil
}

// seen reports whether p (unmapped) is among peers (any form).
func seen(peers []netip.Addr, p netip.Addr) bool {
	for _, q := range peers {
		if q.Unmap() == p {
			return true
		}
	}
	return false
}

// permit installs or refreshes p's permission; t.mu is held, and the
// caller publishes.
func (t *Table) permit(a *Allocation, p netip.Addr, now time.Time) {
	e := a.permission(p)
	if e == nil {
		e = &permission{peer: p}
		a.perms = append(a.perms, e)
		a.Route.Usage.CountPermission()
	}
	e.expires = now.Add(t.limits.Load().permissionLifetime())
	t.schedule(&e.item, e.expires, due{kind: duePermission, a: a, entry: e})
}

// BindChannel creates or refreshes the binding of channel number to peer
// for the channel lifetime (Limits) from now, and installs or refreshes peer's
// permission in the same step (RFC 8656 §12.2). It fails, changing
// nothing, when number is bound (or cooling down) to another peer
// (ErrChannelNumberTaken) or peer to another number
// (ErrChannelPeerTaken), when peer's family is not allocated
// (ErrFamilyMismatch), or past max channels (ErrChannelQuota) or
// maxPerms permissions (ErrPermissionQuota; 0: no cap).
func (t *Table) BindChannel(a *Allocation, number uint16, peer netip.AddrPort, now time.Time, max, maxPerms int) error {
	peer = netaddr.Unmap(peer)
	t.mu.Lock()
	defer t.mu.Unlock()
	if a.ending != 0 || a.t != t {
		return ErrGone
	}
	if !a.families().Has(bindings.Of(peer.Addr())) {
		return ErrFamilyMismatch
	}
	c := a.channel(number)
	exists := c != nil
	if exists && c.peer != peer {
		return ErrChannelNumberTaken
	}
	for _, o := range a.chans {
		if o.peer == peer && o.number != number {
			return ErrChannelPeerTaken
		}
	}
	if !exists && max > 0 && len(a.chans) >= max {
		return ErrChannelQuota
	}
	if a.permission(peer.Addr()) == nil && maxPerms > 0 && len(a.perms) >= maxPerms {
		return ErrPermissionQuota
	}
	if !exists {
		c = &channel{number: number, peer: peer}
		a.chans = append(a.chans, c)
	}
	if !exists || c.cooling {
		a.Route.Usage.CountChannel()
	}
	c.cooling = false
	c.expires = now.Add(t.limits.Load().channelLifetime())
	t.schedule(&c.item, c.expires, due{kind: dueChannel, a: a, entry: c})
	t.permit(a, peer.Addr(), now)
	a.publishPermissions()
	a.publishChannels()
	return nil
}

// publishPermissions stores a fresh copy of a's permissions in its route
// (copy-on-write: a reader keeps the slice it loaded); the lock is held.
func (a *Allocation) publishPermissions() {
	p := make([]netip.Addr, 0, len(a.perms))
	for _, e := range a.perms {
		p = append(p, e.peer)
	}
	a.Route.SetPermissions(p)
}

// publishChannels stores a fresh copy of a's bound channels (not those
// cooling down) in its route; the lock is held.
func (a *Allocation) publishChannels() {
	c := make([]bindings.Channel, 0, len(a.chans))
	for _, ch := range a.chans {
		if !ch.cooling {
			c = append(c, bindings.Channel{Number: ch.number, Peer: ch.peer})
		}
	}
	a.Route.SetChannels(c)
}

// Revoke removes every permission and channel whose peer denied now
// refuses (a reload narrowed the peer filter) and returns how many it
// removed; channels cooling down are removed uncounted.
func (t *Table) Revoke(denied func(netip.Addr) bool) (permissions, channels int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, a := range t.byTuple {
		pn, cn := 0, 0
		a.perms = slices.DeleteFunc(a.perms, func(e *permission) bool {
			if !denied(e.peer) {
				return false
			}
			t.unschedule(&e.item)
			pn++
			return true
		})
		a.chans = slices.DeleteFunc(a.chans, func(c *channel) bool {
			if !denied(c.peer.Addr()) {
				return false
			}
			t.unschedule(&c.item)
			if !c.cooling {
				cn++
			}
			return true
		})
		if pn > 0 {
			a.publishPermissions()
		}
		if cn > 0 {
			a.publishChannels()
		}
		permissions, channels = permissions+pn, channels+cn
	}
	return permissions, channels
}
