package edge

import (
	"net"
	"net/netip"

	"github.com/turnd/turnd/internal/gate"
	"github.com/turnd/turnd/internal/mmsg"
)

// PacketConn puts the edge in front of a UDP listening socket: pion reads
// through it and writes through it, and the gate sees every packet. hint, if
// not nil, receives the relay port of a reservation token for the packet
// being handled; give the same hint to the relay generator of this socket's
// pion configuration. fast, if not nil, is offered every packet first.
func (e *Edge) PacketConn(inner *mmsg.Socket, hint *PortHint, fast FastPath) (net.PacketConn, error) {
	if hint == nil {
		hint = new(PortHint)
	}
	batch, err := mmsg.NewReader(inner, readBatch, readBuffer, 0)
	if err != nil {
		return nil, err
	}
	return &packetConn{Socket: inner, e: e, hint: hint, fast: fast, batch: batch}, nil
}

// readBatch is how many datagrams one recvmmsg may bring in: under load the
// socket's queue is drained with one system call per batch instead of one
// per datagram. readBuffer holds the largest datagram pion accepts (1600).
const (
	readBatch  = 32
	readBuffer = 2048
)

type packetConn struct {
	*mmsg.Socket
	e     *Edge
	hint  *PortHint
	fast  FastPath
	batch *mmsg.Reader
	busy  handing // pion holds a packet from this socket
}

// ReadFrom returns the next packet pion should handle.
//
// Hot path: one call per client datagram. ChannelData on a bound channel is
// relayed by the fast path without leaving this loop and without a heap
// allocation; everything else costs the gate a two-byte look, plus the
// net.Addr pion needs.
func (c *packetConn) ReadFrom(p []byte) (int, net.Addr, error) {
	// pion has finished with the previous packet: its hint is stale, and
	// its answer is written.
	c.hint.set(0)
	c.busy.back(c.e.flight)
	for {
		buf, n, from, err := c.batch.Next()
		if err != nil {
			return 0, nil, err
		}
		out, addr, v, port := c.handle(buf[:n], from)
		switch v {
		case gate.Pass:
			if c.busy.hand(c.e.flight) {
				c.hint.set(port)
				return copy(p, buf[:n]), addr, nil
			}
		case gate.Rewrite:
			// A rewrite only ever shrinks or keeps the size.
			if len(out) <= len(p) && c.busy.hand(c.e.flight) {
				c.hint.set(port)
				return copy(p, out), addr, nil
			}
		}
		// Answered, quiescing (or an impossible oversized rewrite): nothing
		// for pion; read on.
	}
}

// handle runs one datagram through the fast path and the gate. A panic in
// either drops that datagram and is reported; it never takes the socket's
// read loop, and with it every other client of the socket, down.
func (c *packetConn) handle(pkt []byte, from netip.AddrPort) (out []byte, addr net.Addr, v gate.Verdict, port gate.PortRequest) {
	defer func() {
		if r := recover(); r != nil {
			c.e.recovered(r)
			v = gate.Answered
		}
	}()
	if c.fast != nil && c.fast(pkt, from) {
		return nil, nil, gate.Answered, 0
	}
	addr = net.UDPAddrFromAddrPort(from)
	out, v, port = c.e.gate.InspectDatagram(pkt, addr, c.Socket.LocalAddr(), c.Socket)
	return out, addr, v, port
}

// WriteTo sends pion's packet to the client, noting reservation tokens and
// granted lifetimes, and giving error responses their reason phrase.
//
// Hot path: one call per datagram pion sends a client; a two-byte look.
func (c *packetConn) WriteTo(p []byte, addr net.Addr) (int, error) {
	if out, changed := c.e.gate.Outgoing(p, addr, func() net.Addr { return addr }, c.Socket.LocalAddr); changed {
		if _, err := c.Socket.WriteTo(out, addr); err != nil {
			return 0, err
		}
		return len(p), nil // pion checks that what it wrote was written
	}
	return c.Socket.WriteTo(p, addr)
}
