package gate

import "net"

// Outgoing is the gate's look at what pion writes a client: it learns the
// reservation token of an Allocate success (datagram: a UDP socket group,
// where the gate keeps tokens, see reservation.go) and the lifetime a
// success granted (Hooks.Granted), and gives an error response its reason
// phrase. It returns the bytes to write instead when it changed them.
//
// to is the address pion writes to; client and server name the 5-tuple and
// are called only for the answers that need them.
//
// Hot path: one call per write to a client; a two-byte look for all but
// responses.
func (g *Gate) Outgoing(b []byte, to net.Addr, client, server func() net.Addr, datagram bool) (out []byte, changed bool) {
	if datagram && isAllocateAnswer(b) {
		g.noteResponse(b, to, server())
	}
	g.noteGranted(b, client, server)
	return g.withReason(b, to)
}
