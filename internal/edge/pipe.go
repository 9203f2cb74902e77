package edge

import (
	"context"
	"errors"
	"io"
	"os"
	"time"
)

// pipeBuffer is what one direction of an RFC 6062 data connection copies
// at a time.
const pipeBuffer = 16 << 10

// The two directions of a pipe, indexing pipeState.
const (
	pipeUp   = 0 // the client's bytes to the peer
	pipeDown = 1 // the peer's bytes to the client
)

// runPipe copies an RFC 6062 data connection both ways (§5.4: after a
// successful ConnectionBind the connection carries the peer's bytes, no
// longer framed), on two goroutines. The
// bytes the reader had read behind the ConnectionBind go to the peer first.
// Either direction ending ends both; a pipe moved to a successor
// (Release) ends neither side.
func (c *clientConn) runPipe() {
	c.mu.Lock()
	peer := c.pipe
	c.ps.live = [2]bool{true, true}
	c.ps.done = make(chan struct{})
	if !c.ps.held { // a Pause's deadlines stay: the pipe starts parked
		// Stop's, if it came during the bind (a pipe flows on), or an
		// earlier process's Pause's on a peer adopted as it was.
		c.pipeDeadlinesLocked(time.Time{})
	}
	c.mu.Unlock()
	unread := c.buf[c.start:]
	c.buf, c.start = nil, 0
	go c.pipeDown(peer)
	c.pipeUp(peer, unread)
}

// pipeUp copies the client's bytes to the peer.
func (c *clientConn) pipeUp(peer io.ReadWriteCloser, unread []byte) {
	if len(unread) > 0 {
		if _, err := peer.Write(unread); err != nil {
			c.endPipe(pipeUp, peer)
			return
		}
	}
	var src io.Reader = c.conn
	if c.raw != nil {
		src = c.raw
	}
	if !c.copyPipe(pipeUp, peer, src) {
		c.endPipe(pipeUp, peer)
	}
}

// pipeDown copies the peer's bytes to the client, once the answers the
// outbox holds (the ConnectionBind's success) are out: nothing else writes
// a data connection, so it writes the socket directly and waits as TCP
// asks, instead of dropping.
func (c *clientConn) pipeDown(peer io.ReadWriteCloser) {
	if err := c.out.waitEmpty(context.Background()); err != nil {
		c.endPipe(pipeDown, peer)
		return
	}
	var w io.Writer = c.conn
	if c.raw != nil {
		w = c.raw
	}
	if !c.copyPipe(pipeDown, w, peer) {
		c.endPipe(pipeDown, peer)
	}
}

// copyPipe copies src to dst until either fails (false) or the pipe moves
// to a successor (true). A read a Pause's deadline interrupts parks it,
// after what the read returned is written: nothing read stays unwritten.
func (c *clientConn) copyPipe(dir int, dst io.Writer, src io.Reader) (moved bool) {
	buf := make([]byte, pipeBuffer)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return false
			}
		}
		switch {
		case err == nil:
		case !errors.Is(err, os.ErrDeadlineExceeded):
			return false
		default:
			switch c.parkPipe(dir) {
			case pipeMoved:
				return true
			case pipeEnded:
				return false
			}
		}
	}
}

// endPipe ends both sides of a data connection, and wakes the other
// direction if it is parked.
func (c *clientConn) endPipe(dir int, peer io.Closer) {
	c.mu.Lock()
	c.ps.live[dir] = false
	c.pipeArrivedLocked(dir)
	select {
	case <-c.ps.done:
	default:
		close(c.ps.done)
	}
	c.mu.Unlock()
	_ = peer.Close()
	_ = c.Close()
}
