package relay

import (
	"encoding/binary"
	"net/netip"
	"sync"
)

// The uplink fast path: ChannelData from a UDP client goes to its peer
// through the allocation's relay socket without pion. pion still owns the
// bindings (ChannelBind, refresh, expiry); the server mirrors them here from
// pion's channel events, so an expired or deleted channel stops relaying the
// moment pion drops it.

// upKey identifies a channel from the client side: its address and number.
type upKey struct {
	client netip.AddrPort // unmapped
	number uint16
}

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

// RelayChannelData relays one ChannelData message from a UDP client if its
// channel is bound, and reports whether it did; if not, the caller hands the
// packet to pion (which answers or drops it as RFC 8656 says).
//
// Hot path: one call per client datagram; no allocation.
func (g *Generator) RelayChannelData(pkt []byte, client netip.AddrPort) bool {
	if len(pkt) < 4 {
		return false
	}
	length := int(binary.BigEndian.Uint16(pkt[2:4]))
	if 4+length > len(pkt) {
		return false // truncated: pion drops it with a log line
	}
	r, ok := g.up.get(upKey{client: unmap(client), number: binary.BigEndian.Uint16(pkt[0:2])})
	if !ok {
		return false
	}
	r.conn.relayUp(pkt[4:4+length], r.peer)
	return true
}
