package gate

import (
	"net"
	"net/netip"
)

// FastPath relays a client's data packet (ChannelData, Send indication)
// itself and reports whether it did; what it does not take goes to pion. It
// is offered every packet and must say no to the rest cheaply.
type FastPath func(pkt []byte, client netip.AddrPort) bool

// PacketConn puts the gate in front of a UDP listening socket: pion reads
// through it and writes through it. hint, if not nil, receives the relay
// port of a reservation token for the packet being handled; give the same
// hint to the relay generator of this socket's pion configuration. fast, if
// not nil, is offered every packet first.
func PacketConn(inner *net.UDPConn, g *Gate, hint *PortHint, fast FastPath) net.PacketConn {
	if hint == nil {
		hint = new(PortHint)
	}
	return &packetConn{UDPConn: inner, g: g, hint: hint, fast: fast}
}

type packetConn struct {
	*net.UDPConn
	g    *Gate
	hint *PortHint
	fast FastPath
}

// ReadFrom returns the next packet pion should handle.
//
// Hot path: one call per client datagram. ChannelData on a bound channel is
// relayed by the fast path without leaving this loop and without a heap
// allocation; everything else costs the gate a two-byte look, plus the
// net.Addr pion needs.
func (c *packetConn) ReadFrom(p []byte) (int, net.Addr, error) {
	// pion has finished with the previous packet: its hint is stale.
	c.hint.set(0)
	for {
		n, from, err := c.UDPConn.ReadFromUDPAddrPort(p)
		if err != nil {
			return 0, nil, err
		}
		out, addr, v, port := c.handle(p[:n], from)
		switch v {
		case Pass:
			return n, addr, nil
		case Rewrite:
			if len(out) <= len(p) { // a rewrite only ever shrinks or keeps the size
				c.hint.set(port)
				return copy(p, out), addr, nil
			}
		}
		// Answered (or an impossible oversized rewrite): nothing for pion; read on.
	}
}

// handle runs one datagram through the fast path and the gate. A panic in
// either drops that datagram and is reported; it never takes the socket's
// read loop, and with it every other client of the socket, down.
func (c *packetConn) handle(pkt []byte, from netip.AddrPort) (out []byte, addr net.Addr, v Verdict, port int) {
	defer func() {
		if r := recover(); r != nil {
			c.g.panicked(r)
			v = Answered
		}
	}()
	if c.fast != nil && c.fast(pkt, from) {
		return nil, nil, Answered, 0
	}
	addr = net.UDPAddrFromAddrPort(from)
	out, v, port = c.g.inspect(pkt, addr, c.UDPConn.LocalAddr(), c.UDPConn)
	return out, addr, v, port
}

// WriteTo sends pion's packet to the client, noting reservation tokens.
//
// Hot path: one call per datagram pion sends a client; a two-byte look.
func (c *packetConn) WriteTo(p []byte, addr net.Addr) (int, error) {
	c.g.noteResponse(p)
	return c.UDPConn.WriteTo(p, addr)
}
