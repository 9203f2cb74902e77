package edge

import (
	"net"

	"github.com/turnd/turnd/internal/wire"
)

// reactorRead bounds what a reactor reads from one connection per turn:
// whatever it reads goes to the peer at once, as a burst of datagrams that
// nothing paces (UDP has no flow control), so a small bound keeps the
// bursts from many connections within a peer's receive buffer (figures:
// docs/benchmarks.md). A larger frame takes several turns.
const reactorRead = 2048

// Reactor reads a plain TCP client's connection for the edge: the relay's
// downlink loop (relay.Loop), which then carries both directions of the
// client. pion's plane hands it a connection once the client holds an
// allocation (Edge.Allocated); the own plane from accept, for the
// connection's life (StreamOptions.Reactor), and its ready then serves
// STUN messages inline too, so the Handler must not block.
type Reactor interface {
	// Watch calls ready on the reactor's goroutine whenever fd is readable,
	// until ready returns false; if the reactor stops first it calls
	// released instead. Either way fd is then out of its set.
	Watch(fd int, ready func() bool, released func()) error
	// Unwatch takes fd out of the set if it is there and reports whether it
	// was; after it returns, ready is not running.
	Unwatch(fd int) bool
}

// await hands the connection to its reactor until the reactor has read
// something for pion (or an error) and handed it back; false if it has no
// reactor, and Read must read the connection itself.
func (c *streamConn) await() bool {
	r := c.reactor.Load()
	if r == nil {
		return false
	}
	c.watchMu.Lock()
	if c.closing {
		c.watchMu.Unlock()
		c.readErr = net.ErrClosed
		return true
	}
	err := (*r).Watch(c.sock.Fd(), c.readyFn, c.releasedFn)
	c.watchMu.Unlock()
	if err != nil {
		c.reactor.Store(nil) // the reactor has stopped: read here from now on
		return false
	}
	<-c.back
	return true
}

// ready runs on the reactor's goroutine while Read waits in await: it reads
// what the connection holds and relays the data frames at the front. It
// hands the connection back to Read (false) at the first frame the fast
// path does not take — a STUN request for pion, a frame to vet — and at an
// error or the end of the stream; a partial frame waits for more bytes.
//
// Hot path: one call per readable connection; no allocation, except to
// grow the buffer for a frame larger than it.
func (c *streamConn) ready() bool {
	if c.rd == c.vetted && c.rd > 0 { // Read left nothing unvetted before the partial frame
		n := copy(c.buf, c.buf[c.rd:])
		c.buf, c.vetted, c.rd = c.buf[:n], 0, 0
	}
	c.grow()
	n, err := c.sock.TryRead(c.buf[len(c.buf):min(cap(c.buf), len(c.buf)+reactorRead)])
	c.buf = c.buf[:len(c.buf)+n]
	if err != nil {
		c.readErr = err
		return c.handBack()
	}
	for {
		rest := c.buf[c.vetted:]
		if len(rest) < 4 {
			return true // a partial frame: wait for the rest
		}
		size, ok := wire.FrameSize(rest)
		switch {
		case ok && len(rest) < size:
			return true
		case !ok || !wire.IsData(rest) || !c.offer(rest[:size]):
			return c.handBack()
		}
		c.rd += size // relayed; nothing waits for pion in front of it
		c.vetted += size
	}
}

// handBack gives the connection back to Read, waiting in await.
func (c *streamConn) handBack() bool {
	c.back <- struct{}{}
	return false
}

// released is the reactor stopping while Read waits in await.
func (c *streamConn) released() { c.back <- struct{}{} }
