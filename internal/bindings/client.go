package bindings

import (
	"io"
	"net/netip"

	"github.com/turnd/turnd/internal/netaddr"
)

// Client is where an allocation's client is and how to reach it: through
// the UDP socket its requests came in on (Lane), or its TCP or TLS
// connection (Stream). Exactly one of the two is set.
type Client struct {
	Tuple  netaddr.FiveTuple
	TLS    bool
	Lane   Lane   // UDP: the group socket the client's datagrams arrive on
	Stream Stream // TCP/TLS: the edge's connection
}

// Lane is a client-facing UDP socket (the relay resolves it to its own
// socket type once, when the route is opened).
type Lane interface {
	WriteToUDPAddrPort(b []byte, to netip.AddrPort) (int, error)
}

// Stream is a client's TCP or TLS connection as the edge serves it.
type Stream interface {
	// Write sends one whole message (an answer, a Data indication). It
	// never stalls the caller's loop: a connection that cannot take it
	// now queues it or drops it.
	Write(b []byte) (int, error)
	// TryWritev sends whole messages now, or none and reports false: the
	// downlink never waits for one client.
	TryWritev(frames [][]byte) bool
	// Idle says whether the connection holds no allocation, so that
	// limits.idle_connection_timeout applies to it.
	Idle(idle bool)
	// Pipe makes the connection, after the message being served, a data
	// pipe to peer (RFC 6062 §5.4 ConnectionBind): the bytes already read
	// behind the request go to peer first.
	Pipe(peer io.ReadWriteCloser)
	Close() error
}

// Send writes one message to the client: through its stream, or its lane
// to its address. A lost message is lost: UDP promises no better, and a
// broken stream ends its allocation where it is read.
func (c *Client) Send(b []byte) {
	if c.Stream != nil {
		_, _ = c.Stream.Write(b)
		return
	}
	if c.Lane != nil {
		_, _ = c.Lane.WriteToUDPAddrPort(b, c.Tuple.Client)
	}
}
