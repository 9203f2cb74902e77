package edge

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os"
	"syscall"
	"time"

	"github.com/turnd/turnd/internal/bindings"
	"github.com/turnd/turnd/internal/mmsg"
	"github.com/turnd/turnd/internal/netaddr"
)

// StreamOptions say how ServeStreams serves a listener's connections.
type StreamOptions struct {
	// Handler serves every STUN message (required).
	Handler Handler
	// FastPath, if not nil, gives a connection its fast path by its local
	// address (turnd's side of the 5-tuple): relay.RelayStreamFor.
	FastPath func(local net.Addr) FastPath
	// Reactor, if not nil, picks the relay loop that reads a new plain TCP
	// connection for its whole life (nil from it, or a loop that refuses:
	// the connection's own goroutine reads it). TLS connections always
	// have their own goroutine: crypto/tls reads block.
	Reactor func() Reactor
	// HandshakeTimeout bounds a TLS handshake (0: HandshakeTimeout).
	HandshakeTimeout time.Duration
	// Closed, if not nil, is told once of every connection that ended
	// (the client's, an error, Close), after it is closed: the allocation
	// it carried ends with it (RFC 8656 §2.3: a TCP or TLS allocation
	// lives as long as its connection). It must not block.
	Closed func(c *bindings.Client)
	// AfterFunc, if not nil, replaces time.AfterFunc for the idle timeout
	// (a test's fake clock).
	AfterFunc func(d time.Duration, f func()) (stop func() bool)
}

// ServeStreams serves the connections ln accepts (a listener of Sockets:
// its caps, claims, PROXY headers, shared TCP/TLS port and accept retry
// apply before a connection gets here) until ln is closed. Each connection
// gets one reader for its life, which frames the stream once (RFC 8656
// §12.5) and hands data frames to the fast path and STUN messages to the
// handler, inline, with a Client whose Stream is the connection. Pause
// parks it (the kernel queues new connections). It returns nil once Stop
// has begun, or once Release moved ln's socket (after serving what a
// sorting port had already taken); any other end is returned and reported
// through Failed.
func (e *Edge) ServeStreams(ln net.Listener, o StreamOptions) error {
	o.defaults()
	a := e.addAccept(ln)
	defer e.dropAccept(a)
	for {
		conn, err := ln.Accept()
		if err != nil {
			if e.stopping() {
				return nil
			}
			// Pause's interruption (holdAccept): no connection was taken.
			if errors.Is(err, os.ErrDeadlineExceeded) {
				if e.parkAccept(a) {
					return e.acceptQueued(ln, &o)
				}
				continue
			}
			err = fmt.Errorf("accept %s: %w", ln.Addr(), err)
			e.fail(err)
			return err
		}
		e.serveConn(conn, &o, ln)
	}
}

// acceptQueued serves, after Release moved ln's socket, the connections a
// sorting port had already taken (mid PROXY header or first byte, or
// sorted and queued): they stay with this process. Any other listener has
// none.
func (e *Edge) acceptQueued(ln net.Listener, o *StreamOptions) error {
	sl, ok := ln.(*sortedListener)
	if !ok {
		return nil
	}
	for {
		conn, ok := sl.queued()
		if !ok {
			return nil
		}
		e.serveConn(conn, o, ln)
	}
}

// defaults fills in the zero options.
func (o *StreamOptions) defaults() {
	if o.HandshakeTimeout <= 0 {
		o.HandshakeTimeout = HandshakeTimeout
	}
	if o.AfterFunc == nil {
		o.AfterFunc = func(d time.Duration, f func()) func() bool { return time.AfterFunc(d, f).Stop }
	}
}

// newConn makes conn, accepted on ln, a connection of the own plane, not
// yet read.
func (e *Edge) newConn(conn net.Conn, o *StreamOptions, ln net.Listener) *clientConn {
	c := &clientConn{e: e, conn: conn, ln: ln, h: o.Handler, closed: o.Closed, afterFunc: o.AfterFunc,
		handshakeTimeout: o.HandshakeTimeout, out: newOutbox(), resume: make(chan struct{}, 1),
		wake: make(chan struct{}, 1)}
	_, isTLS := conn.(*tls.Conn)
	c.client = bindings.Client{Tuple: netaddr.Of(conn.RemoteAddr(), conn.LocalAddr()), TLS: isTLS, Stream: c}
	c.client.Tuple.TCP = true
	if o.FastPath != nil {
		c.fast = o.FastPath(conn.LocalAddr())
	}
	if !isTLS {
		if sc, ok := conn.(syscall.Conn); ok {
			c.raw, _ = mmsg.NewRaw(sc) // nil on error: served as any net.Conn
		}
	}
	return c
}

// serveConn starts a new connection's reader. A plain TCP connection with
// a reactor costs no goroutine; a TLS one starts its own, which does the
// handshake first so that a silent client holds up no other.
func (e *Edge) serveConn(conn net.Conn, o *StreamOptions, ln net.Listener) {
	c := e.newConn(conn, o, ln)
	if !e.addConn(c) {
		_ = conn.Close() // Stop has begun
		return
	}
	c.Idle(true)
	if tc, isTLS := conn.(*tls.Conn); isTLS {
		go c.serveTLS(tc)
		return
	}
	c.startReader(o)
}

// startReader hands a plain TCP connection to its reactor, else to a
// goroutine of its own.
func (c *clientConn) startReader(o *StreamOptions) {
	if c.raw != nil && o.Reactor != nil {
		if c.reactor = o.Reactor(); c.reactor != nil {
			c.readyFn, c.releasedFn = c.ready, c.released
			if c.watch() {
				return
			}
		}
	}
	go c.readLoop()
}

// serveTLS completes the handshake within the timeout, then reads the
// connection.
func (c *clientConn) serveTLS(tc *tls.Conn) {
	ctx, cancel := context.WithTimeout(context.Background(), c.handshakeTimeout)
	err := tc.HandshakeContext(ctx)
	cancel()
	if err != nil {
		_ = c.Close()
		return
	}
	c.readLoop()
}
