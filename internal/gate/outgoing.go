package gate

import "net"

// Outgoing is the gate's look at what pion writes a client: it learns the
// reservation token of an Allocate success to a UDP client (a socket group,
// where the gate keeps tokens, see reservation.go) and the lifetime a
// success granted (Hooks.Granted), and gives an error response its reason
// phrase. It returns the bytes to write instead when it changed them.
//
// to is the address pion writes to; client and server name the 5-tuple and
// are called only for the answers that need them.
//
// Hot path: one call per write to a client; everything but a STUN response
// returns after a one-byte look.
func (g *Gate) Outgoing(b []byte, to net.Addr, client, server func() net.Addr) (out []byte, changed bool) {
	if len(b) < 20 || b[0]&0xC1 != 0x01 { // a STUN response: top bits 00, class bit 0x0100
		return b, false
	}
	return g.response(b, to, client, server)
}

// response is Outgoing for a STUN response.
func (g *Gate) response(b []byte, to net.Addr, client, server func() net.Addr) ([]byte, bool) {
	if _, udp := to.(*net.UDPAddr); udp && isAllocateAnswer(b) {
		g.noteResponse(b, to, server())
	}
	g.noteGranted(b, client, server)
	return g.withReason(b, to)
}
