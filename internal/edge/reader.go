package edge

import (
	"errors"
	"fmt"
	"os"

	"github.com/turnd/turnd/internal/wire"
)

// next is what a connection's reader does after serving what it read.
type next int

const (
	readOn next = iota // read more
	again              // frame on: what made frames stop has passed
	pause              // wait for the outbox to empty (resumeReading)
	park               // Pause: read no more until Resume (connhold.go)
	leave              // read no more: stopped, piped, or ended
)

// frames serves the complete frames at the front of buf in order: data to
// the fast path, STUN to the handler, inline (RFC 8656 §12.5: ChannelData
// is padded to four bytes on a stream). more is false when the reader must
// stop framing after a message: the handler piped or closed the
// connection, its answer waits in the outbox, or Stop came.
//
// Hot path: one call per read; no allocation.
func (c *clientConn) frames() (more bool, err error) {
	for {
		rest := c.buf[c.start:]
		if len(rest) < 4 {
			return true, nil
		}
		size, ok := wire.FrameSize(rest)
		if !ok {
			return false, fmt.Errorf("frame from %v: %w", c.client.Tuple.Client, ErrBadFraming)
		}
		if len(rest) < size {
			return true, nil
		}
		c.start += size
		// Pause parks the reader after the frame in hand, handler's or not.
		if c.serveFrame(rest[:size]) && c.mustYield() || c.hold.Load() {
			return false, nil
		}
	}
}

// serveFrame hands one frame to the fast path, else (STUN) to the handler,
// and reports whether the handler saw it. A panic in either drops the
// frame and is reported; the connection carries on.
func (c *clientConn) serveFrame(frame []byte) (served bool) {
	defer func() {
		if r := recover(); r != nil {
			c.e.recovered(r)
			served = true
		}
	}()
	if c.fast != nil && wire.IsData(frame) && c.fast(frame, c.client.Tuple.Client) {
		return false
	}
	if !wire.IsSTUN(frame) {
		return false // ChannelData on no channel (RFC 8656 §12.4)
	}
	c.h(frame, &c.client)
	return true
}

// mustYield reports whether the reader must stop framing after a message.
func (c *clientConn) mustYield() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.pipe != nil || c.closing || c.stopped || (c.raw != nil && c.out.active.Load())
}

// after decides, once frames returned (err: the framing's or the read's),
// what the reader does next, and starts what follows it: the teardown, or
// an RFC 6062 pipe. inLoop says the reactor runs it, which must not wait.
func (c *clientConn) after(more bool, err error, inLoop bool) next {
	c.mu.Lock()
	switch {
	case c.closing || err != nil:
		c.serving = false
		c.closing = true
		c.watching = false
		c.arrived() // a reader Pause waits for stops here too
		c.mu.Unlock()
		if inLoop {
			go c.teardown()
		} else {
			c.teardown()
		}
		return leave
	case c.pipe != nil:
		c.serving = false
		c.watching = false
		if c.hold.Load() { // a Pause came during the ConnectionBind: the pipe starts parked
			c.holdPipeLocked()
		}
		c.arrived()
		c.mu.Unlock()
		go c.runPipe()
		return leave
	case c.stopped:
		c.serving = false
		c.watching = false
		c.arrived()
		c.mu.Unlock()
		return leave
	case c.hold.Load():
		c.serving = false
		c.watching = false
		c.arrived()
		c.mu.Unlock()
		return park
	case !more && c.raw != nil && c.out.active.Load():
		// A client that does not read its answers is not read either.
		c.serving = false
		c.paused = true
		c.watching = false
		c.arrived()
		c.mu.Unlock()
		return pause
	case !more:
		c.mu.Unlock()
		return again // still serving
	}
	c.serving = false
	c.mu.Unlock()
	return readOn
}

// serve frames buf until the reader must do something else. *readErr, the
// error that ended the last read, counts only once every frame in front of
// it is served; a reader that pauses first meets it again on its next read.
func (c *clientConn) serve(readErr *error, inLoop bool) next {
	for {
		more, err := c.frames()
		if err == nil && more {
			err, *readErr = *readErr, nil
		}
		if n := c.after(more, err, inLoop); n != again {
			return n
		}
	}
}

// Largest frame on a stream: a STUN message or padded ChannelData with a
// 16-bit length, plus its header.
const maxFrame = 20 + 0xFFFF + 3

// compact moves the unframed bytes to the front of buf and makes room to
// read into, growing buf only as far as one incomplete frame needs.
func (c *clientConn) compact() {
	if c.start > 0 {
		n := copy(c.buf, c.buf[c.start:])
		c.buf, c.start = c.buf[:n], 0
	}
	if size := min(max(2*cap(c.buf), 4096), maxFrame+4096); cap(c.buf)-len(c.buf) < 1500 && size > cap(c.buf) {
		grown := make([]byte, len(c.buf), size)
		copy(grown, c.buf)
		c.buf = grown
	}
}

// read reads the connection once into buf's free room, waiting for bytes.
func (c *clientConn) read() error {
	c.compact()
	var n int
	var err error
	if c.raw != nil {
		n, err = c.raw.Read(c.buf[len(c.buf):cap(c.buf)])
	} else {
		n, err = c.conn.Read(c.buf[len(c.buf):cap(c.buf)])
	}
	c.buf = c.buf[:len(c.buf)+n]
	return err
}

// readLoop is a connection's reader on its own goroutine: a TLS
// connection's (crypto/tls reads block), or a plain one's without a
// reactor. It serves what buf holds before each read: a paused reader may
// have left complete frames behind.
func (c *clientConn) readLoop() {
	if !c.e.enterReader() {
		return
	}
	defer c.e.leaveReader()
	c.mu.Lock()
	c.inReader = true
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		c.inReader, c.parkedR = false, false
		c.arrived()
		c.mu.Unlock()
	}()
	var err error
	for {
		c.mu.Lock()
		if c.closing || c.stopped {
			// Closed under the read (Close tears down), or Stop: bytes
			// read now stay unframed in buf.
			c.mu.Unlock()
			return
		}
		if c.hold.Load() {
			c.parkedR = true
			c.arrived()
			c.mu.Unlock()
			select {
			case <-c.wake:
			case <-c.out.done:
				return
			case <-c.e.own.stopped:
				return
			}
			continue
		}
		c.parkedR = false
		c.serving = true
		c.mu.Unlock()
		n := c.serve(&err, false)
		switch n {
		case leave:
			return
		case park:
			continue
		case pause:
			select {
			case <-c.resume:
				continue
			case <-c.out.done:
				return
			case <-c.e.own.stopped:
				return
			}
		}
		if err = c.read(); errors.Is(err, os.ErrDeadlineExceeded) {
			err = nil // Pause's or Stop's wake-up: the loop's top decides
		}
	}
}
