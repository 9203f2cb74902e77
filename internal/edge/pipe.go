package edge

import (
	"context"
	"io"
	"time"
)

// pipeBuffer is what one direction of an RFC 6062 data connection copies
// at a time.
const pipeBuffer = 16 << 10

// runPipe copies an RFC 6062 data connection both ways (§5.4: after a
// successful ConnectionBind the connection carries the peer's bytes, no
// longer framed), on two goroutines. The
// bytes the reader had read behind the ConnectionBind go to the peer first.
// Either direction ending ends both.
func (c *clientConn) runPipe() {
	c.mu.Lock()
	peer := c.pipe
	c.mu.Unlock()
	_ = c.conn.SetReadDeadline(time.Time{}) // Stop's, if it came during the bind: a pipe flows on
	unread := c.buf[c.start:]
	c.buf, c.start = nil, 0
	go c.pipeDown(peer)
	c.pipeUp(peer, unread)
}

// pipeUp copies the client's bytes to the peer.
func (c *clientConn) pipeUp(peer io.WriteCloser, unread []byte) {
	defer c.endPipe(peer)
	if len(unread) > 0 {
		if _, err := peer.Write(unread); err != nil {
			return
		}
	}
	buf := make([]byte, pipeBuffer)
	for {
		var n int
		var err error
		if c.raw != nil {
			n, err = c.raw.Read(buf)
		} else {
			n, err = c.conn.Read(buf)
		}
		if n > 0 {
			if _, werr := peer.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// pipeDown copies the peer's bytes to the client, once the answers the
// outbox holds (the ConnectionBind's success) are out: nothing else writes
// a data connection, so it writes the socket directly and waits as TCP
// asks, instead of dropping.
func (c *clientConn) pipeDown(peer io.ReadCloser) {
	defer c.endPipe(peer)
	if err := c.out.waitEmpty(context.Background()); err != nil {
		return
	}
	var w io.Writer = c.conn
	if c.raw != nil {
		w = c.raw
	}
	_, _ = io.CopyBuffer(w, peer, make([]byte, pipeBuffer))
}

// endPipe ends both sides of a data connection.
func (c *clientConn) endPipe(peer io.Closer) {
	_ = peer.Close()
	_ = c.Close()
}
