package bindings

import (
	"net/netip"
	"sync/atomic"

	"github.com/turnd/turnd/internal/traffic"
)

// Route is one allocation as the fast path reads it. The control plane
// (the allocation table, under its lock) is the only writer of the
// permission and channel sets; each write stores a fresh slice, so a
// reader needs one atomic load, no lock and no allocation.
type Route struct {
	// Client is fixed before the relay sees the route.
	Client Client
	// Usage is the allocation's traffic: written by the relay per packet,
	// read for usage records, /sessions and snapshots.
	Usage traffic.Tally

	perms atomic.Pointer[[]netip.Addr]
	chans atomic.Pointer[[]Channel]
	// mirror is told of each new channel set: the kernel fast path keeps a
	// copy, which must change when the set does, not a packet later.
	mirror atomic.Pointer[func()]
}

// Channel is one channel binding (RFC 8656 §12): a number and its peer.
type Channel struct {
	Number uint16
	Peer   netip.AddrPort // unmapped
}

// Permitted reports whether peer (any form) holds a permission.
//
// Hot path: linear over a handful of entries, no lock, no allocation.
func (r *Route) Permitted(peer netip.Addr) bool {
	p := r.perms.Load()
	if p == nil {
		return false
	}
	peer = peer.Unmap()
	for _, a := range *p {
		if a == peer {
			return true
		}
	}
	return false
}

// Peer is the peer bound to channel number: where uplink ChannelData goes.
//
// Hot path: no lock, no allocation.
func (r *Route) Peer(number uint16) (netip.AddrPort, bool) {
	c := r.chans.Load()
	if c == nil {
		return netip.AddrPort{}, false
	}
	for _, ch := range *c {
		if ch.Number == number {
			return ch.Peer, true
		}
	}
	return netip.AddrPort{}, false
}

// Number is the channel bound to peer (any form): how the downlink frames
// the peer's datagram.
//
// Hot path: no lock, no allocation.
func (r *Route) Number(peer netip.AddrPort) (uint16, bool) {
	c := r.chans.Load()
	if c == nil {
		return 0, false
	}
	peer = netip.AddrPortFrom(peer.Addr().Unmap(), peer.Port())
	for _, ch := range *c {
		if ch.Peer == peer {
			return ch.Number, true
		}
	}
	return 0, false
}

// Permissions is the current permission set; the caller must not modify it.
func (r *Route) Permissions() []netip.Addr {
	if p := r.perms.Load(); p != nil {
		return *p
	}
	return nil
}

// Channels is the current channel set; the caller must not modify it.
func (r *Route) Channels() []Channel {
	if c := r.chans.Load(); c != nil {
		return *c
	}
	return nil
}

// SetPermissions replaces the permission set with p (unmapped addresses),
// which the route keeps: the caller must not modify it afterwards. One
// writer at a time (the table's lock).
func (r *Route) SetPermissions(p []netip.Addr) { r.perms.Store(&p) }

// SetChannels replaces the channel set with c, which the route keeps: the
// caller must not modify it afterwards. One writer at a time; the mirror,
// if any, runs before it returns.
func (r *Route) SetChannels(c []Channel) {
	r.chans.Store(&c)
	if m := r.mirror.Load(); m != nil {
		(*m)()
	}
}

// SetMirror makes f run after each SetChannels (nil: nothing runs); f
// reads Channels and must not call SetChannels.
func (r *Route) SetMirror(f func()) {
	if f == nil {
		r.mirror.Store(nil)
		return
	}
	r.mirror.Store(&f)
}
