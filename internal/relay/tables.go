package relay

import (
	"fmt"
	"io"
	"net"
	"net/netip"

	"github.com/turnd/turnd/internal/bindings"
	"github.com/turnd/turnd/internal/netaddr"
)

// AttachClient tells the relay advertised as relayAddr who its client is,
// which turns on the fast paths for it: a UDP client is answered through the
// allocation's lane; a TCP or TLS client through stream, its connection
// (nil leaves a stream client to pion); server is turnd's side of the
// client's 5-tuple. client must be the address object pion keyed the
// allocation by: once the relay socket is closed, ReadFrom returns only
// after Deleted (or Close), having retired it (retire.go).
func (rl *Relay) AttachClient(relayAddr, client, server net.Addr, stream io.Writer) error {
	if k, ok := tcpKey(relayAddr); ok {
		return rl.attachTCP(k, client, server)
	}
	cc, err := rl.conn(relayAddr)
	if err != nil {
		return fmt.Errorf("attach client: %w", err)
	}
	cc.retireAfterReport(client)
	if cc.lane == nil {
		cc.server = rl.serverOf(server) // a UDP client's is its lane's, set with the socket
	}
	r := cc.route
	switch client.(type) {
	case *net.UDPAddr:
		if cc.lane == nil {
			return nil
		}
		r.Client = bindings.Client{Tuple: netaddr.Of(client, server), Lane: cc.lane}
	case *net.TCPAddr:
		if stream == nil {
			if cc.loop != nil {
				return fmt.Errorf("attach client %v: %w", client, ErrNoClientWriter)
			}
			return nil
		}
		r.Client = bindings.Client{Tuple: netaddr.Of(client, server), Stream: newPionStream(stream)}
	default:
		return nil
	}
	cc.client.Store(&r.Client) // publishes the Client just written: nothing read it before
	rl.byClient.set(cc.clientKey(&r.Client), binding{route: r, socks: [2]*Conn{cc, cc}})
	return nil
}

// Permit mirrors a permission pion installed (or, with revoke, removed) into
// the route of the relay advertised as relayAddr.
func (rl *Relay) Permit(relayAddr net.Addr, peer net.IP, revoke bool) error {
	a, ok := netip.AddrFromSlice(peer)
	if k, isTCP := tcpKey(relayAddr); isTCP {
		if ok {
			rl.permitTCP(k, a.Unmap(), revoke)
		}
		return nil
	}
	cc, err := rl.conn(relayAddr)
	if err != nil {
		if revoke {
			return nil
		}
		return fmt.Errorf("permit: %w", err)
	}
	if !ok {
		return nil
	}
	cc.bindMu.Lock()
	permit(cc.route, a.Unmap(), revoke)
	cc.bindMu.Unlock()
	return nil
}

// BindChannel mirrors a channel pion bound (or, with unbind, removed) into
// the route of the relay advertised as relayAddr.
func (rl *Relay) BindChannel(relayAddr, peer net.Addr, number uint16, unbind bool) error {
	if k, ok := tcpKey(relayAddr); ok {
		rl.bindTCP(k, netaddr.AddrPort(peer), number, unbind)
		return nil
	}
	cc, err := rl.conn(relayAddr)
	if err != nil {
		if unbind {
			return nil // the allocation is gone already, and its routes with it
		}
		return fmt.Errorf("bind channel: %w", err)
	}
	pa, ok := peer.(*net.UDPAddr)
	if !ok {
		return nil
	}
	cc.bindMu.Lock()
	bindChannel(cc.route, netaddr.AddrPort(pa), number, unbind)
	cc.bindMu.Unlock()
	return nil
}

// Permissions returns how many peers the allocation of a client's 5-tuple
// permits, and a test for one peer; ok
// is false when the fast path does not know the client.
func (rl *Relay) Permissions(t netaddr.FiveTuple) (int, func(netip.Addr) bool, bool) {
	r := rl.routeOf(t)
	if r == nil {
		return 0, nil, false
	}
	return len(r.Permissions()), r.Permitted, true
}

// Channels returns how many channels the allocation of a client's 5-tuple
// binds (as Permissions), and a test for one channel number; ok is false
// when the client is unknown.
func (rl *Relay) Channels(t netaddr.FiveTuple) (int, func(uint16) bool, bool) {
	r := rl.routeOf(t)
	if r == nil {
		return 0, nil, false
	}
	list := r.Channels()
	return len(list), func(num uint16) bool {
		for _, ch := range list {
			if ch.Number == num {
				return true
			}
		}
		return false
	}, true
}

// serverOf numbers turnd's side of a 5-tuple (a UDP or TCP address) for
// the fast path's keys, giving it a number the first time (serverID).
// Called per allocation and per socket or connection, never per packet.
func (rl *Relay) serverOf(addr net.Addr) serverID {
	return rl.serverID(netaddr.Of(nil, addr))
}

// routeOf finds the route of a client's 5-tuple: a UDP relay's, or an RFC
// 6062 relay's.
func (rl *Relay) routeOf(t netaddr.FiveTuple) *bindings.Route {
	rl.mu.Lock()
	k, ok := rl.keyOf(t)
	rl.mu.Unlock()
	if !ok {
		return nil
	}
	if b, ok := rl.byClient.get(k); ok {
		return b.route
	}
	if r := rl.tcpRelayOf(t); r != nil {
		return r.route
	}
	return nil
}
