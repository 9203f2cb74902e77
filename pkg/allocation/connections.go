package allocation

import (
	"encoding/binary"
	"net/netip"
	"time"

	"github.com/turnd/turnd/internal/netaddr"
)

// ConnectionBindTimeout is how long a peer connection waits for its
// ConnectionBind (RFC 6062 §5.3: 30 seconds).
const ConnectionBindTimeout = 30 * time.Second

// peerConn is an RFC 6062 peer data connection's record.
type peerConn struct {
	id      uint32
	peer    netip.AddrPort
	bound   bool
	expires time.Time // the bind deadline, while not bound
	item    *due
}

// AddConnection records a peer connection of an RFC 6062 allocation (one
// it dialled for a Connect, RFC 6062 §5.2, or one a peer opened to it,
// §5.3) and returns its CONNECTION-ID, unique in the table. Unless bound
// by ConnectionBindTimeout from now, it is dropped and Hooks.ConnExpired
// called. A second connection to the same peer is ErrConnectionExists
// (446); past max connections waiting for their ConnectionBind,
// ErrConnectionQuota (0: no cap). Bound ones are data connections, no
// longer pending, and do not count.
func (t *Table) AddConnection(a *Allocation, peer netip.AddrPort, now time.Time, max int) (uint32, error) {
	peer = netaddr.Unmap(peer)
	t.mu.Lock()
	defer t.mu.Unlock()
	if a.ending != 0 || a.t != t {
		return 0, ErrGone
	}
	pending := 0
	for _, c := range a.conns {
		if c.peer == peer {
			return 0, ErrConnectionExists
		}
		if !c.bound {
			pending++
		}
	}
	if max > 0 && pending >= max {
		return 0, ErrConnectionQuota
	}
	var id uint32
	for id == 0 || t.byConn[id] != nil {
		var b [4]byte
		t.random(b[:])
		id = binary.BigEndian.Uint32(b[:])
	}
	t.putConnection(a, &peerConn{id: id, peer: peer, expires: now.Add(ConnectionBindTimeout)})
	return id, nil
}

// putConnection files c as one of a's connections; t.mu is held.
func (t *Table) putConnection(a *Allocation, c *peerConn) {
	if a.conns == nil {
		a.conns = make(map[uint32]*peerConn)
	}
	a.conns[c.id] = c
	t.byConn[c.id] = a
	if !c.bound {
		t.schedule(&c.item, c.expires, due{kind: dueConnection, a: a, entry: c})
	}
}

// BindConnection marks connection id bound by a ConnectionBind (RFC 6062
// §5.4) and returns its allocation and peer; the caller checks that the
// request's user is the allocation's. An unknown, bound or expired id is
// ErrNoConnection (400).
func (t *Table) BindConnection(id uint32, now time.Time) (*Allocation, netip.AddrPort, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	a, ok := t.byConn[id]
	if !ok {
		return nil, netip.AddrPort{}, ErrNoConnection
	}
	c := a.conns[id]
	if c.bound || !now.Before(c.expires) {
		return nil, netip.AddrPort{}, ErrNoConnection
	}
	c.bound = true
	c.expires = time.Time{}
	t.unschedule(&c.item)
	return a, c.peer, nil
}

// ConnectionReady restarts connection id's bind deadline at
// ConnectionBindTimeout from now: its Connect's dial succeeded, and RFC
// 6062 §5.2's 30 seconds for the ConnectionBind run from the success, not
// from the request. False when the record is gone (its allocation ended,
// or it was dropped while dialling).
func (t *Table) ConnectionReady(id uint32, now time.Time) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	a, ok := t.byConn[id]
	if !ok {
		return false
	}
	if c := a.conns[id]; !c.bound {
		c.expires = now.Add(ConnectionBindTimeout)
		t.schedule(&c.item, c.expires, due{kind: dueConnection, a: a, entry: c})
	}
	return true
}

// DropConnection forgets connection id (its peer or client side closed).
func (t *Table) DropConnection(id uint32) {
	t.mu.Lock()
	defer t.mu.Unlock()
	a, ok := t.byConn[id]
	if !ok {
		return
	}
	t.unschedule(&a.conns[id].item)
	delete(a.conns, id)
	delete(t.byConn, id)
}

// Connection returns connection id's allocation, peer and whether it is
// bound.
func (t *Table) Connection(id uint32) (*Allocation, netip.AddrPort, bool, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	a, ok := t.byConn[id]
	if !ok {
		return nil, netip.AddrPort{}, false, false
	}
	c := a.conns[id]
	return a, c.peer, c.bound, true
}

// expireConnection drops an unbound connection whose deadline passed; t.mu is held.
func (t *Table) expireConnection(a *Allocation, id uint32, after *[]func()) {
	delete(a.conns, id)
	delete(t.byConn, id)
	if h := t.hooks.ConnExpired; h != nil {
		*after = append(*after, func() { h(a, id) })
	}
}
