package relay

import (
	"fmt"
	"io"
	"net"
	"net/netip"

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
	var cp *clientPath
	switch a := client.(type) {
	case *net.UDPAddr:
		if cc.lane == nil {
			return nil
		}
		cp = &clientPath{sock: cc.lane, addr: a.AddrPort()}
	case *net.TCPAddr:
		if stream == nil {
			if cc.loop != nil {
				return fmt.Errorf("attach client %v: %w", client, ErrNoClientWriter)
			}
			return nil
		}
		cp = &clientPath{stream: stream, addr: a.AddrPort()}
		cp.try, _ = stream.(tryWriter)
	default:
		return nil
	}
	cc.client.Store(cp)
	rl.byClient.set(cp.key(cc.server), cc)
	return nil
}

// Permit mirrors a permission pion installed (or, with revoke, removed) into
// the indication fast paths of the relay advertised as relayAddr.
func (rl *Relay) Permit(relayAddr net.Addr, peer net.IP, revoke bool) error {
	if k, ok := tcpKey(relayAddr); ok {
		if a, ok := netip.AddrFromSlice(peer); ok {
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
	a, ok := netip.AddrFromSlice(peer)
	if !ok {
		return nil
	}
	cc.setPermission(a.Unmap(), revoke)
	return nil
}

// BindChannel mirrors a channel pion bound (or, with unbind, removed) into
// the fast paths of the relay advertised as relayAddr.
func (rl *Relay) BindChannel(relayAddr, peer net.Addr, number uint16, unbind bool) error {
	if k, ok := tcpKey(relayAddr); ok {
		rl.bindTCP(k, number, unbind)
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
	peerAP := netaddr.AddrPort(pa)
	cc.setChannel(peerAP, number, unbind)
	cp := cc.client.Load()
	if cp == nil {
		return nil
	}
	k := upKey{client: netaddr.Unmap(cp.addr), server: cc.server, number: number}
	if unbind {
		rl.up.del(k, cc)
		return nil
	}
	rl.up.set(k, upRoute{conn: cc, peer: peerAP})
	return nil
}

// Permissions returns how many peers the allocation of a client's 5-tuple
// permits, and a test for one peer; ok
// is false when the fast path does not know the client.
func (rl *Relay) Permissions(t netaddr.FiveTuple) (int, func(netip.Addr) bool, bool) {
	c := rl.clientConn(t)
	if c == nil {
		return rl.tcpPermissions(t)
	}
	n := 0
	if p := c.perms.Load(); p != nil {
		n = len(*p)
	}
	return n, c.permitted, true
}

// Channels returns how many channels the allocation of a client's 5-tuple
// binds (as Permissions), and a test for one channel number; ok is false
// when the client is unknown.
func (rl *Relay) Channels(t netaddr.FiveTuple) (int, func(uint16) bool, bool) {
	c := rl.clientConn(t)
	if c == nil {
		return rl.tcpChannels(t)
	}
	chans := c.chans.Load()
	if chans == nil {
		return 0, func(uint16) bool { return false }, true
	}
	list := *chans
	return len(list), func(num uint16) bool {
		for _, ch := range list {
			if ch.number == num {
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
	k := netaddr.Of(nil, addr)
	rl.mu.Lock()
	defer rl.mu.Unlock()
	id, ok := rl.servers[k]
	if !ok {
		id = serverID(len(rl.servers) + 1) // 0: none
		rl.servers[k] = id
	}
	return id
}

// clientConn finds the allocation of a client's 5-tuple.
func (rl *Relay) clientConn(t netaddr.FiveTuple) *Conn {
	rl.mu.Lock()
	k, ok := rl.keyOf(t)
	rl.mu.Unlock()
	if !ok {
		return nil
	}
	c, _ := rl.byClient.get(k)
	return c
}
