package allocation

import (
	"net/netip"
	"time"

	"github.com/turnd/turnd/internal/bindings"
	"github.com/turnd/turnd/internal/netaddr"
	"github.com/turnd/turnd/internal/traffic"
)

// Allocation is one TURN allocation (RFC 8656 §2.2). The exported fields
// are set before Insert and never change after it, so they are read
// without the lock; the rest is the table's, under its lock, read through
// the methods.
type Allocation struct {
	Tuple     netaddr.FiveTuple
	Transport Transport // the client's
	// User is the user ID the credentials resolved to (REST: the part
	// after the expiry); Username is the USERNAME as sent.
	User, Username, Realm string
	Created               time.Time // Insert's now when zero
	// TxID is its Allocate's transaction ID: a retransmission gets the
	// same success (RFC 8656 §7.2 step 2).
	TxID         [12]byte
	Route        *bindings.Route // what the relay reads; Insert makes one when nil
	DontFragment bool
	// PeerTCP marks an RFC 6062 allocation: its relayed address is a TCP
	// listener and its peers are connections.
	PeerTCP bool

	t       *Table
	book    *booking
	relayed [2]relayAddr // index bindings.Families.Index; zero: none
	perms   map[netip.Addr]*permission
	chans   map[uint16]*channel
	conns   map[uint32]*peerConn
	held    *reservation  // the partner port held for a token
	carried traffic.Usage // counted before a hand-over (Restore)
	ending  EndReason
}

// relayAddr is one family's relayed address and its lifetime.
type relayAddr struct {
	addr    netip.AddrPort
	expires time.Time
	item    *due
}

// permission is one peer's permission (RFC 8656 §9).
type permission struct {
	expires time.Time
	item    *due
}

// channel is one channel binding (RFC 8656 §12). After it expires it
// cools down for ChannelCooldown: not routed, but its number and peer stay
// each other's.
type channel struct {
	peer    netip.AddrPort
	expires time.Time
	cooling bool
	item    *due
}

// Families returns the families the allocation has a relayed address of.
func (a *Allocation) Families() bindings.Families {
	a.t.mu.Lock()
	defer a.t.mu.Unlock()
	return a.families()
}

// families is Families; the table's lock is held.
func (a *Allocation) families() bindings.Families {
	var f bindings.Families
	if a.relayed[0].addr.IsValid() {
		f |= bindings.V4
	}
	if a.relayed[1].addr.IsValid() {
		f |= bindings.V6
	}
	return f
}

// Relayed returns the allocation's relayed address of family f (V4 or
// V6); false when it has none of that family (any more).
func (a *Allocation) Relayed(f bindings.Families) (netip.AddrPort, bool) {
	a.t.mu.Lock()
	defer a.t.mu.Unlock()
	r := a.relayed[f.Index()].addr
	return r, r.IsValid()
}

// RelayedAll returns both relayed addresses (index bindings.Families.Index;
// zero: none).
func (a *Allocation) RelayedAll() [2]netip.AddrPort {
	a.t.mu.Lock()
	defer a.t.mu.Unlock()
	return [2]netip.AddrPort{a.relayed[0].addr, a.relayed[1].addr}
}

// Expires returns when family f (V4 or V6) ends unless refreshed; zero
// when the allocation has no address of it.
func (a *Allocation) Expires(f bindings.Families) time.Time {
	a.t.mu.Lock()
	defer a.t.mu.Unlock()
	return a.relayed[f.Index()].expires
}

// Deadline returns when the allocation ends unless refreshed: its last
// family's deadline.
func (a *Allocation) Deadline() time.Time {
	a.t.mu.Lock()
	defer a.t.mu.Unlock()
	return a.deadline()
}

func (a *Allocation) deadline() time.Time {
	e := a.relayed[0].expires
	if a.relayed[1].expires.After(e) {
		e = a.relayed[1].expires
	}
	return e
}

// Ended returns why the allocation ended; false while it is live.
func (a *Allocation) Ended() (EndReason, bool) {
	a.t.mu.Lock()
	defer a.t.mu.Unlock()
	return a.ending, a.ending != 0
}

// Permission returns when peer's permission expires; false: none.
func (a *Allocation) Permission(peer netip.Addr) (time.Time, bool) {
	a.t.mu.Lock()
	defer a.t.mu.Unlock()
	p, ok := a.perms[peer.Unmap()]
	if !ok {
		return time.Time{}, false
	}
	return p.expires, true
}

// Channel returns channel number's peer and when its binding expires;
// false when it is not bound (a binding cooling down after its expiry is
// not bound).
func (a *Allocation) Channel(number uint16) (netip.AddrPort, time.Time, bool) {
	a.t.mu.Lock()
	defer a.t.mu.Unlock()
	c, ok := a.chans[number]
	if !ok || c.cooling {
		return netip.AddrPort{}, time.Time{}, false
	}
	return c.peer, c.expires, true
}

// Usage returns the allocation's traffic: its route's tally, plus what a
// predecessor process had counted before a hand-over.
func (a *Allocation) Usage() traffic.Usage {
	u := a.Route.Usage.Usage()
	a.t.mu.Lock()
	c := a.carried
	a.t.mu.Unlock()
	return addUsage(u, c)
}

func addUsage(u, c traffic.Usage) traffic.Usage {
	u.ToPeerPackets += c.ToPeerPackets
	u.ToPeerBytes += c.ToPeerBytes
	u.FromPeerPackets += c.FromPeerPackets
	u.FromPeerBytes += c.FromPeerBytes
	u.Permissions += c.Permissions
	u.Channels += c.Channels
	u.RateLimited += c.RateLimited
	u.NoPermission += c.NoPermission
	return u
}
