package relay

import (
	"encoding/binary"
	"net"
	"net/netip"
	"sync"

	"github.com/turnd/turnd/pkg/mmsg"
)

// The uplink fast path: ChannelData from a UDP client goes to its peer
// through the allocation's relay socket without pion. pion still owns the
// bindings (ChannelBind, refresh, expiry); the server mirrors them here from
// pion's channel events, so an expired or deleted channel stops relaying the
// moment pion drops it.

// upKey identifies a channel from the client side: its address, the
// server side of its 5-tuple (a server address, or a stream), and the
// channel number.
type upKey struct {
	client netip.AddrPort // unmapped
	server serverID
	number uint16
}

// serverID stands for the server side of a client's 5-tuple in the fast
// path's keys: one number per turnd address and transport (a client-facing
// UDP address; the local address of a TCP or TLS connection). It matters
// when one client address holds allocations on two of turnd's addresses, as
// a browser's socket may with two TURN URLs naming one turnd, and when a
// UDP and a TCP client share an address: those are separate allocations,
// and each must relay its own channels and Send indications. A small number
// keeps the keys as small as a flag did.
type serverID uint16

type upRoute struct {
	conn *Conn
	peer netip.AddrPort
}

// upShards spreads the table over locks so lanes on different CPUs rarely
// meet; each lookup takes one read lock.
const upShards = 64

type upTable struct {
	shards [upShards]struct {
		mu sync.RWMutex
		m  map[upKey]upRoute
		_  [32]byte // keep neighbouring shards' locks off one cache line
	}
}

func (t *upTable) shard(k upKey) int {
	h := uint32(k.client.Port())*2654435761 ^ uint32(k.number)
	if a := k.client.Addr(); a.Is4() {
		b := a.As4()
		h ^= binary.BigEndian.Uint32(b[:])
	}
	return int(h % upShards)
}

func (t *upTable) get(k upKey) (upRoute, bool) {
	s := &t.shards[t.shard(k)]
	s.mu.RLock()
	r, ok := s.m[k]
	s.mu.RUnlock()
	return r, ok
}

func (t *upTable) set(k upKey, r upRoute) {
	s := &t.shards[t.shard(k)]
	s.mu.Lock()
	if s.m == nil {
		s.m = make(map[upKey]upRoute)
	}
	s.m[k] = r
	s.mu.Unlock()
}

// del removes k if it still routes to conn (a rebind may have replaced it).
func (t *upTable) del(k upKey, conn *Conn) {
	s := &t.shards[t.shard(k)]
	s.mu.Lock()
	if r, ok := s.m[k]; ok && (conn == nil || r.conn == conn) {
		delete(s.m, k)
	}
	s.mu.Unlock()
}

// clientKey identifies a client's 5-tuple: its address and its server side.
type clientKey struct {
	client netip.AddrPort // unmapped
	server serverID
}

// clientTable finds a client's allocation, for Send indications.
type clientTable struct {
	shards [upShards]struct {
		mu sync.RWMutex
		m  map[clientKey]*Conn
		_  [32]byte
	}
}

func (t *clientTable) shard(a clientKey) int {
	return (&upTable{}).shard(upKey{client: a.client})
}

func (t *clientTable) get(a clientKey) *Conn {
	s := &t.shards[t.shard(a)]
	s.mu.RLock()
	c := s.m[a]
	s.mu.RUnlock()
	return c
}

func (t *clientTable) set(a clientKey, c *Conn) {
	s := &t.shards[t.shard(a)]
	s.mu.Lock()
	if s.m == nil {
		s.m = make(map[clientKey]*Conn)
	}
	s.m[a] = c
	s.mu.Unlock()
}

func (t *clientTable) del(a clientKey, c *Conn) {
	s := &t.shards[t.shard(a)]
	s.mu.Lock()
	if s.m[a] == c {
		delete(s.m, a)
	}
	s.mu.Unlock()
}

// RelayFor returns the fast path of the client-facing UDP socket lane: it
// relays one data packet from a client of lane — ChannelData on a bound
// channel, or a Send indication to a peer with a permission — and reports
// whether it did. Anything else (control requests, unbound channels,
// malformed packets) is left to the caller, which hands it to pion.
//
// Hot path: one call per client datagram; no allocation.
func (g *Generator) RelayFor(lane *mmsg.Socket) func(pkt []byte, client netip.AddrPort) bool {
	server := g.serverOf(lane.LocalAddr())
	return func(pkt []byte, client netip.AddrPort) bool { return g.relay(pkt, client, server) }
}

// RelayStreamFor is RelayFor for the TCP or TLS connections whose local
// address (turnd's side) is local: it relays one frame of their client.
//
// Hot path: one call per client frame; no allocation.
func (g *Generator) RelayStreamFor(local net.Addr) func(pkt []byte, client netip.AddrPort) bool {
	server := g.serverOf(local)
	return func(pkt []byte, client netip.AddrPort) bool { return g.relay(pkt, client, server) }
}

func (g *Generator) relay(pkt []byte, client netip.AddrPort, server serverID) bool {
	switch {
	case len(pkt) >= 4 && pkt[0]&0xC0 == 0x40:
		return g.relayChannelData(pkt, client, server)
	case len(pkt) >= stunHeader && pkt[0] == 0 && pkt[1] == typeSendIndication:
		return g.relaySend(pkt, client, server)
	}
	return false
}

// relaySend relays a Send indication (RFC 8656 §11.2) if the client's
// allocation has a permission for the peer.
func (g *Generator) relaySend(pkt []byte, client netip.AddrPort, server serverID) bool {
	peer, data, ok := parseSend(pkt)
	if !ok {
		return false
	}
	c := g.byClient.get(clientKey{client: unmap(client), server: server})
	if c == nil {
		return false
	}
	peer = unmap(peer)
	if peer.Port() == 0 || (g.opts.Forbidden != nil && g.opts.Forbidden(peer)) {
		return true // taken, and dropped: no peer, or turnd itself
	}
	if !c.permitted(peer.Addr()) {
		return false // pion drops it, as §11.2 asks
	}
	c.relayUp(data, peer)
	return true
}

func (g *Generator) relayChannelData(pkt []byte, client netip.AddrPort, server serverID) bool {
	if len(pkt) < 4 {
		return false
	}
	length := int(binary.BigEndian.Uint16(pkt[2:4]))
	if 4+length > len(pkt) {
		return false // truncated: pion drops it with a log line
	}
	r, ok := g.up.get(upKey{client: unmap(client), server: server, number: binary.BigEndian.Uint16(pkt[0:2])})
	if !ok {
		return false
	}
	r.conn.relayUp(pkt[4:4+length], r.peer)
	return true
}
