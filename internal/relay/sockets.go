package relay

import (
	"fmt"
	"math/rand/v2"
	"net"
	"runtime"

	"github.com/turnd/turnd/internal/bindings"
	"github.com/turnd/turnd/internal/mmsg"
	"github.com/turnd/turnd/internal/netaddr"
	"github.com/turnd/turnd/internal/wire"
)

// AllocateUDP makes the UDP relay socket of an allocation, on network
// ("udp4" or "udp6") and port (0: any in the range), for a client arriving
// on the client-facing UDP socket lane: a downlink loop reads its relay
// socket and answers the client through the lane. A nil lane leaves the
// downlink to pion's read loop (and Conn.ReadFrom's fast path), as for TLS
// clients; such a relay socket is waited on through an epoll set of its own
// (see mmsg.Socket), one more descriptor per allocation.
func (rl *Relay) AllocateUDP(network string, port int, lane *mmsg.Socket) (net.PacketConn, net.Addr, error) {
	return rl.allocateUDP(network, port, lane, lane != nil)
}

// AllocateUDPForStream is AllocateUDP for an allocation of a plain TCP
// client: a downlink loop serves it, writing to the client's connection
// without waiting (see AttachClient). TLS clients are served by pion's read
// loop (AllocateUDP with no lane): their writes go through crypto/tls.
func (rl *Relay) AllocateUDPForStream(network string, port int) (net.PacketConn, net.Addr, error) {
	return rl.allocateUDP(network, port, nil, true)
}

func (rl *Relay) allocateUDP(network string, requested int, lane *mmsg.Socket, loop bool) (net.PacketConn, net.Addr, error) {
	cc, external, err := rl.openUDP(udpSpec{network: network, port: requested, lane: lane, loop: loop, route: &bindings.Route{}})
	if err != nil {
		return nil, nil, err
	}
	return cc, &net.UDPAddr{IP: external, Port: cc.key.port}, nil
}

// udpSpec is what one relay socket is made for.
type udpSpec struct {
	network string // "udp4" or "udp6"
	port    int    // a held or requested port; 0: any in the range
	even    bool   // an even port only (EVEN-PORT)
	lane    *mmsg.Socket
	loop    bool // a downlink loop reads it
	route   *bindings.Route
	// client, when known already (Open), is set before a loop may read
	// the socket; nil: pion's AttachClient sets it later.
	client *bindings.Client
	opened bool
	// to and from are the allocation's rates, shared by its sockets;
	// nil: the socket's own.
	to, from *limit
}

// openUDP binds a relay socket for s and records it as live; it returns
// the address to advertise.
func (rl *Relay) openUDP(s udpSpec) (*Conn, net.IP, error) {
	bind, external, v6, err := rl.family(s.network)
	if err != nil {
		return nil, nil, err
	}
	var conn *mmsg.Socket
	if s.port != 0 {
		conn = rl.takeHeld(liveKey{v6: v6, port: s.port})
	}
	if conn == nil {
		err = rl.eachPort(s.port, v6, s.even, func(port int) error {
			c, lerr := listenRelay(s.network, bind, port)
			conn = c
			return lerr
		})
	}
	if err != nil {
		return nil, nil, fmt.Errorf("allocate udp relay: %w", err)
	}
	port := conn.LocalAddr().(*net.UDPAddr).Port
	cc := &Conn{Socket: conn, relay: rl, key: liveKey{v6: v6, port: port}, lane: s.lane, route: s.route,
		opened: s.opened, six: s.opened && v6, txids: rand.NewPCG(rand.Uint64(), rand.Uint64()), head: wire.DataIndicationHead4}
	if !s.opened {
		cc.route.Usage.Header = uint64(udpHeader(v6))
	}
	cc.toRate, cc.fromRate = s.to, s.from
	if cc.toRate == nil {
		cc.toRate, cc.fromRate = &limit{}, &limit{}
	}
	if s.lane != nil {
		cc.server = rl.serverOf(s.lane.LocalAddr())
	}
	if v6 {
		cc.head = wire.DataIndicationHead6
	}
	if s.client != nil {
		cc.client.Store(s.client)
	}
	cc.fd = int32(conn.Fd())
	if cc.raw, err = mmsg.NewRaw(conn); err != nil {
		_ = conn.Close()
		return nil, nil, fmt.Errorf("allocate udp relay: %w", err)
	}
	if s.loop {
		if err := rl.watch(cc); err != nil {
			_ = conn.Close()
			return nil, nil, fmt.Errorf("allocate udp relay: %w", err)
		}
	}
	rl.mu.Lock()
	rl.live[cc.key] = cc
	rl.mu.Unlock()
	return cc, external, nil
}

// watch hands the relay socket of a UDP or plain TCP client's allocation to
// a downlink loop, round robin.
func (rl *Relay) watch(c *Conn) error {
	d, err := rl.pickLoop()
	if err != nil {
		return err
	}
	c.done = make(chan struct{})
	if err := d.add(c); err != nil {
		return err
	}
	c.loop = d
	return nil
}

// pickLoop starts the downlink loops on first use and picks one, round
// robin.
func (rl *Relay) pickLoop() (*downlink, error) {
	rl.loopsOnce.Do(func() {
		for range downlinkLoops(runtime.GOMAXPROCS(0)) {
			d, err := newDownlink(rl)
			if err != nil {
				rl.loopsErr = err
				return
			}
			rl.loops = append(rl.loops, d)
		}
	})
	switch {
	case rl.loopsErr != nil:
		return nil, rl.loopsErr
	case len(rl.loops) == 0:
		return nil, net.ErrClosed // the relay closed before any loop started
	}
	return rl.loops[int(rl.nextLoop.Add(1))%len(rl.loops)], nil
}

// conn finds the live UDP relay socket advertised as relayAddr.
func (rl *Relay) conn(relayAddr net.Addr) (*Conn, error) {
	ua, ok := relayAddr.(*net.UDPAddr)
	if !ok {
		return nil, fmt.Errorf("relay %v: %w", relayAddr, ErrNotTracked)
	}
	rl.mu.Lock()
	cc := rl.live[liveKey{v6: ua.IP.To4() == nil, port: ua.Port}]
	rl.mu.Unlock()
	if cc == nil {
		return nil, fmt.Errorf("relay %v: %w", relayAddr, ErrNotTracked)
	}
	return cc, nil
}

// forget drops a closed socket and every uplink route through it.
func (rl *Relay) forget(c *Conn) {
	rl.mu.Lock()
	if rl.live[c.key] == c {
		delete(rl.live, c.key)
	}
	rl.mu.Unlock()
	rl.releasePartner(c.key)
	switch cp := c.client.Load(); {
	case c.opened:
		rl.unindex(c)
	case cp != nil:
		rl.byClient.del(c.clientKey(cp), c.route)
	}
}

// clientKey is the uplink index's key of c's client.
func (c *Conn) clientKey(cp *bindings.Client) clientKey {
	return clientKey{client: netaddr.Unmap(cp.Tuple.Client), server: c.server}
}

// SetDontFragment turns on DF for the live UDP relay socket advertised as relayAddr.
func (rl *Relay) SetDontFragment(relayAddr net.Addr) error {
	cc, err := rl.conn(relayAddr)
	if err != nil {
		return fmt.Errorf("set don't-fragment: %w", err)
	}
	return setDontFragment(cc.Socket)
}
