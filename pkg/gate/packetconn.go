package gate

import "net"

// PacketConn puts the gate in front of a UDP listening socket: pion reads
// through it and writes through it. hint, if not nil, receives the relay
// port of a reservation token for the packet being handled; give the same
// hint to the relay generator of this socket's pion configuration.
func PacketConn(inner net.PacketConn, g *Gate, hint *PortHint) net.PacketConn {
	if hint == nil {
		hint = new(PortHint)
	}
	return &packetConn{PacketConn: inner, g: g, hint: hint}
}

type packetConn struct {
	net.PacketConn
	g    *Gate
	hint *PortHint
}

// ReadFrom returns the next packet pion should handle.
//
// Hot path: one call per client datagram; for ChannelData and indications
// the gate costs a two-byte look and no allocation.
func (c *packetConn) ReadFrom(p []byte) (int, net.Addr, error) {
	// pion has finished with the previous packet: its hint is stale.
	c.hint.set(0)
	for {
		n, addr, err := c.PacketConn.ReadFrom(p)
		if err != nil {
			return n, addr, err
		}
		out, v, port := c.g.inspect(p[:n], addr, c.PacketConn.LocalAddr(), c.PacketConn)
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

// WriteTo sends pion's packet to the client, noting reservation tokens.
//
// Hot path: one call per datagram to a client; a two-byte look.
func (c *packetConn) WriteTo(p []byte, addr net.Addr) (int, error) {
	c.g.noteResponse(p)
	return c.PacketConn.WriteTo(p, addr)
}
