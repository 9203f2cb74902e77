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
	bind, external, v6, err := rl.family(network)
	if err != nil {
		return nil, nil, err
	}
	var conn *mmsg.Socket
	if requested != 0 {
		conn = rl.takeHeld(liveKey{v6: v6, port: requested})
	}
	if conn == nil {
		err = rl.eachPort(requested, v6, func(port int) error {
			c, lerr := listenRelay(network, bind, port)
			conn = c
			return lerr
		})
	}
	if err != nil {
		return nil, nil, fmt.Errorf("allocate udp relay: %w", err)
	}
	port := conn.LocalAddr().(*net.UDPAddr).Port
	cc := &Conn{Socket: conn, relay: rl, key: liveKey{v6: v6, port: port}, lane: lane, route: &bindings.Route{},
		txids: rand.NewPCG(rand.Uint64(), rand.Uint64()), head: wire.DataIndicationHead4}
	cc.route.Usage.Header = uint64(udpHeader(v6))
	if lane != nil {
		cc.server = rl.serverOf(lane.LocalAddr())
	}
	if v6 {
		cc.head = wire.DataIndicationHead6
	}
	cc.fd = int32(conn.Fd())
	if cc.raw, err = mmsg.NewRaw(conn); err != nil {
		_ = conn.Close()
		return nil, nil, fmt.Errorf("allocate udp relay: %w", err)
	}
	if loop {
		if err := rl.watch(cc); err != nil {
			_ = conn.Close()
			return nil, nil, fmt.Errorf("allocate udp relay: %w", err)
		}
	}
	rl.mu.Lock()
	rl.live[cc.key] = cc
	rl.mu.Unlock()
	return cc, &net.UDPAddr{IP: external, Port: port}, nil
}

// watch hands the relay socket of a UDP or plain TCP client's allocation to
// a downlink loop, round robin.
func (rl *Relay) watch(c *Conn) error {
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
	if rl.loopsErr != nil {
		return rl.loopsErr
	}
	d := rl.loops[int(rl.nextLoop.Add(1))%len(rl.loops)]
	c.done = make(chan struct{})
	if err := d.add(c); err != nil {
		return err
	}
	c.loop = d
	return nil
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
	if cp := c.client.Load(); cp != nil {
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
