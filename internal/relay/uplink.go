package relay

import (
	"net"
	"net/netip"

	"github.com/turnd/turnd/internal/bindings"
	"github.com/turnd/turnd/internal/mmsg"
	"github.com/turnd/turnd/internal/netaddr"
	"github.com/turnd/turnd/internal/traffic"
	"github.com/turnd/turnd/internal/wire"
)

// The uplink fast path: ChannelData and Send indications from a client go
// to their peer through the allocation's relay socket. The
// client's 5-tuple finds its route (byClient); the route's channels and
// permissions, which the control plane writes, say where the data may go,
// so an expired or deleted channel stops relaying the moment its writer
// drops it.

// serverID stands for the server side of a client's 5-tuple in the fast
// path's keys: one number per turnd address and transport (a client-facing
// UDP address; the local address of a TCP or TLS connection). It matters
// when one client address holds allocations on two of turnd's addresses, as
// a browser's socket may with two TURN URLs naming one turnd, and when a
// UDP and a TCP client share an address: those are separate allocations,
// and each must relay its own channels and Send indications. A small number
// keeps the keys as small as a flag did.
type serverID uint16

// binding is a client's allocation as the uplink finds it: its route, and
// its relay sockets by family (Families.Index) — the socket of the peer's
// family sends.
type binding struct {
	route *bindings.Route
	socks [2]*Conn
}

func (b binding) owner() *bindings.Route { return b.route }

// via is the relay socket that sends to peer; nil when the route has no
// relay of the peer's family.
func (b binding) via(peer netip.Addr) *Conn {
	if peer.Is4() || peer.Is4In6() {
		return b.socks[0]
	}
	return b.socks[1]
}

// clientKey identifies a client's 5-tuple: its address and its server side.
type clientKey struct {
	client netip.AddrPort // unmapped
	server serverID
}

func (k clientKey) hash() uint32 { return addrPortHash(k.client) }

// keyOf is where a 5-tuple becomes the relay's client key: the fast path
// hashes and compares keys per packet, so the server side is the small
// number serverOf gave it, not an address. ok is false for a server side
// with no number (nothing was ever allocated there). rl.mu must be held.
func (rl *Relay) keyOf(t netaddr.FiveTuple) (clientKey, bool) {
	id, ok := rl.servers[netaddr.FiveTuple{Server: t.Server, TCP: t.TCP}]
	return clientKey{client: t.Client, server: id}, ok
}

// RelayFor returns the fast path of the client-facing UDP socket lane: it
// relays one data packet from a client of lane — ChannelData on a bound
// channel, or a Send indication to a peer with a permission — and reports
// whether it did. Anything else (control requests, unbound channels,
// malformed packets) is left to the caller, which hands it to the handlers.
//
// Hot path: one call per client datagram; no allocation.
func (rl *Relay) RelayFor(lane *mmsg.Socket) func(pkt []byte, client netip.AddrPort) bool {
	server := rl.serverOf(lane.LocalAddr())
	return func(pkt []byte, client netip.AddrPort) bool { return rl.relay(pkt, client, server) }
}

// RelayStreamFor is RelayFor for the TCP or TLS connections whose local
// address (turnd's side) is local: it relays one frame of their client.
//
// Hot path: one call per client frame; no allocation.
func (rl *Relay) RelayStreamFor(local net.Addr) func(pkt []byte, client netip.AddrPort) bool {
	server := rl.serverOf(local)
	return func(pkt []byte, client netip.AddrPort) bool { return rl.relay(pkt, client, server) }
}

func (rl *Relay) relay(pkt []byte, client netip.AddrPort, server serverID) bool {
	switch {
	case wire.IsChannelData(pkt):
		return rl.relayChannelData(pkt, client, server)
	case wire.IsSendIndication(pkt):
		return rl.relaySend(pkt, client, server)
	}
	return false
}

// relaySend relays a Send indication (RFC 8656 §11.2) if the client's
// allocation has a permission for the peer.
func (rl *Relay) relaySend(pkt []byte, client netip.AddrPort, server serverID) bool {
	peer, data, ok := wire.ParseSend(pkt)
	if !ok {
		return false
	}
	b, ok := rl.byClient.get(clientKey{client: netaddr.Unmap(client), server: server})
	if !ok {
		return false
	}
	peer = netaddr.Unmap(peer)
	c := b.via(peer.Addr())
	if c == nil {
		return false // no relay of the peer's family: the control plane drops it
	}
	if peer.Port() == 0 || (rl.opts.Forbidden != nil && rl.opts.Forbidden(peer)) {
		c.dropTo(traffic.ForbiddenPeer, len(data))
		return true // taken, and dropped: no peer, or turnd itself
	}
	if !b.route.Permitted(peer.Addr()) {
		return false // the Send handler drops it, as §11.2 asks
	}
	c.relayUp(data, peer)
	return true
}

func (rl *Relay) relayChannelData(pkt []byte, client netip.AddrPort, server serverID) bool {
	number, payload, ok := wire.ParseChannelData(pkt)
	if !ok {
		return false // truncated: the edge drops it
	}
	b, ok := rl.byClient.get(clientKey{client: netaddr.Unmap(client), server: server})
	if !ok {
		return false
	}
	peer, ok := b.route.Peer(number)
	if !ok {
		return false
	}
	c := b.via(peer.Addr())
	if c == nil {
		return false
	}
	c.relayUp(payload, peer)
	return true
}
