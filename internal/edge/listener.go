package edge

import (
	"net"
	"syscall"
	"time"

	"github.com/turnd/turnd/internal/mmsg"
)

// Listener puts the edge in front of a TCP or TLS listener: every accepted
// connection is framed into STUN messages and ChannelData so the gate can
// inspect each, and pion reads the vetted byte stream.
// fast, if not nil, gives each connection its fast path by the connection's
// local address (turnd's side of the 5-tuple): it is offered every
// ChannelData and Send indication frame first (see FastPath), with the
// client's address.
func (e *Edge) Listener(inner net.Listener, handshakeTimeout time.Duration, fast func(local net.Addr) FastPath) net.Listener {
	return &listener{Listener: inner, e: e, handshakeTimeout: handshakeTimeout, fast: fast}
}

type listener struct {
	net.Listener
	e                *Edge
	handshakeTimeout time.Duration
	fast             func(local net.Addr) FastPath // a connection's, by its local address
}

// Accept returns the next connection, wrapped. It never blocks on a TLS
// handshake: that happens on the connection's first Read, in its own goroutine.
func (l *listener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	sc := &streamConn{Conn: c, e: l.e, handshakeTimeout: l.handshakeTimeout}
	if l.fast != nil {
		sc.fast = l.fast(c.LocalAddr())
	}
	if idle := l.e.gate.IdleTimeout(); idle > 0 {
		// Cleared when the connection gets an allocation (Edge.Allocated)
		// or becomes an RFC 6062 data connection; until then a silent or
		// idle connection is cut, freeing its goroutine and socket.
		_ = c.SetReadDeadline(time.Now().Add(idle))
	}
	if ta, ok := c.RemoteAddr().(*net.TCPAddr); ok {
		sc.remote = ta.AddrPort()
	}
	if s, ok := c.(syscall.Conn); ok { // plain TCP; a *tls.Conn is not one
		sc.sock, _ = mmsg.NewRaw(s) // nil on error: the net.Conn path serves
		sc.back = make(chan struct{}, 1)
		sc.readyFn, sc.releasedFn = sc.ready, sc.released
	}
	l.e.streams.put(c.RemoteAddr(), c.LocalAddr(), sc)
	return sc, nil
}
