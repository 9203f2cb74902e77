package relay

import (
	"fmt"
	"math/rand/v2"
	"net"
	"runtime"

	"github.com/turnd/turnd/internal/bindings"
	"github.com/turnd/turnd/internal/mmsg"
	"github.com/turnd/turnd/internal/wire"
)

// udpSpec is what one relay socket is made for.
type udpSpec struct {
	network string // "udp4" or "udp6"
	port    int    // a held or requested port; 0: any in the range
	even    bool   // an even port only (EVEN-PORT)
	lane    *mmsg.Socket
	route   *bindings.Route
	// client is set before a loop may read the socket.
	client *bindings.Client
	// to and from are the allocation's rates, shared by its sockets.
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
	cc, err := rl.serveUDP(conn, s, v6)
	if err != nil {
		return nil, nil, fmt.Errorf("allocate udp relay: %w", err)
	}
	return cc, external, nil
}

// serveUDP makes conn, bound, a relay socket for s: read by a downlink
// loop and recorded as live. conn is closed if it cannot be.
func (rl *Relay) serveUDP(conn *mmsg.Socket, s udpSpec, v6 bool) (*Conn, error) {
	port := conn.LocalAddr().(*net.UDPAddr).Port
	cc := &Conn{Socket: conn, relay: rl, key: liveKey{v6: v6, port: port}, lane: s.lane, route: s.route,
		six: v6, txids: rand.NewPCG(rand.Uint64(), rand.Uint64()), head: wire.DataIndicationHead4}
	cc.toRate, cc.fromRate = s.to, s.from
	if v6 {
		cc.head = wire.DataIndicationHead6
	}
	cc.client.Store(s.client)
	cc.fd = int32(conn.Fd())
	if err := rl.watch(cc); err != nil {
		_ = conn.Close()
		return nil, err
	}
	rl.mu.Lock()
	rl.live[cc.key] = cc
	rl.mu.Unlock()
	return cc, nil
}

// watch hands the relay socket of an allocation to a downlink loop, round
// robin.
func (rl *Relay) watch(c *Conn) error {
	d, err := rl.pickLoop()
	if err != nil {
		return err
	}
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
		rl.pauseMu.Lock()
		defer rl.pauseMu.Unlock()
		for range downlinkLoops(runtime.GOMAXPROCS(0)) {
			d, err := newDownlink(rl, rl.paused)
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

// forget drops a closed socket and every uplink route through it.
func (rl *Relay) forget(c *Conn) {
	rl.mu.Lock()
	if rl.live[c.key] == c {
		delete(rl.live, c.key)
	}
	rl.mu.Unlock()
	rl.releasePartner(c.key)
	rl.unindex(c)
}
