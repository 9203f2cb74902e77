package relay

import (
	"encoding/binary"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
)

// Conn is the relay socket of one UDP allocation. pion reads and writes it
// like any PacketConn; for allocations of UDP clients it also carries the
// downlink fast path: a peer datagram on a bound channel goes straight back
// to the client as ChannelData, without pion and without a heap allocation.
type Conn struct {
	*net.UDPConn
	gen     *Generator
	key     liveKey
	lane    *net.UDPConn               // the client-facing socket of the allocation's lane; nil for stream clients
	client  atomic.Pointer[clientPath] // set once the allocation's client is known
	chans   atomic.Pointer[[]channel]  // copy-on-write: a handful of channels per allocation
	chansMu sync.Mutex                 // serialises writers of chans
	tally   tally
	once    sync.Once
}

// clientPath is where the downlink goes: the client's address via the lane socket.
type clientPath struct {
	sock *net.UDPConn
	addr netip.AddrPort
}

// channel is one channel binding as the downlink sees it.
type channel struct {
	peer   netip.AddrPort // unmapped
	number uint16
}

// ReadFrom hands pion what the fast path does not relay itself.
//
// Hot path: one call per datagram from a peer. The payload is read four
// bytes into p so that a ChannelData header can be put in front of it in
// place (RFC 8656 §12.4: no padding over UDP).
func (c *Conn) ReadFrom(p []byte) (int, net.Addr, error) {
	for {
		if len(p) <= 4 {
			return c.UDPConn.ReadFrom(p)
		}
		n, from, err := c.UDPConn.ReadFromUDPAddrPort(p[4:])
		if err != nil {
			return 0, nil, err
		}
		c.tally.fromPeer(c.gen.opts.Counters, n)
		if cp := c.client.Load(); cp != nil {
			if num, ok := c.channelOf(from); ok && n <= 0xFFFF {
				binary.BigEndian.PutUint16(p[0:2], num)
				binary.BigEndian.PutUint16(p[2:4], uint16(n))
				// A lost datagram is lost; UDP gives no better promise.
				_, _ = cp.sock.WriteToUDPAddrPort(p[:4+n], cp.addr)
				continue
			}
		}
		copy(p, p[4:4+n])
		return n, net.UDPAddrFromAddrPort(from), nil
	}
}

// WriteTo is pion's uplink path (Send indications, and ChannelData the
// fast path did not take).
func (c *Conn) WriteTo(p []byte, addr net.Addr) (int, error) {
	n, err := c.UDPConn.WriteTo(p, addr)
	if err == nil {
		c.tally.toPeer(c.gen.opts.Counters, n)
	}
	return n, err
}

// relayUp sends a client's ChannelData payload to its peer (uplink fast path).
func (c *Conn) relayUp(payload []byte, peer netip.AddrPort) {
	n, err := c.UDPConn.WriteToUDPAddrPort(payload, peer)
	if err == nil {
		c.tally.toPeer(c.gen.opts.Counters, n)
	}
}

// channelOf finds the channel bound to peer. Linear: an allocation has a
// few channels at most (one per peer), and the list is read without a lock.
func (c *Conn) channelOf(peer netip.AddrPort) (uint16, bool) {
	chans := c.chans.Load()
	if chans == nil {
		return 0, false
	}
	peer = unmap(peer)
	for _, ch := range *chans {
		if ch.peer == peer {
			return ch.number, true
		}
	}
	return 0, false
}

// setChannel binds (or with remove, unbinds) number to peer for the downlink.
func (c *Conn) setChannel(peer netip.AddrPort, number uint16, remove bool) {
	c.chansMu.Lock()
	defer c.chansMu.Unlock()
	var next []channel
	if old := c.chans.Load(); old != nil {
		for _, ch := range *old {
			if ch.number != number && ch.peer != peer {
				next = append(next, ch)
			}
		}
	}
	if !remove {
		next = append(next, channel{peer: peer, number: number})
	}
	c.chans.Store(&next)
}

// Close closes the socket once, flushes its traffic tally and forgets it.
func (c *Conn) Close() error {
	err := c.UDPConn.Close()
	c.once.Do(func() {
		c.tally.flush(c.gen.opts.Counters)
		c.gen.forget(c)
	})
	return err
}

func unmap(a netip.AddrPort) netip.AddrPort {
	return netip.AddrPortFrom(a.Addr().Unmap(), a.Port())
}
