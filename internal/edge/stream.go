package edge

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/turnd/turnd/internal/gate"
	"github.com/turnd/turnd/internal/mmsg"
	"github.com/turnd/turnd/internal/wire"
)

// streamConn frames a client's byte stream (RFC 8656 §12.5: ChannelData is
// padded to four bytes over TCP) and runs each STUN message through the gate.
type streamConn struct {
	net.Conn
	e                *Edge
	handshakeTimeout time.Duration
	handshaken       bool

	readMu  sync.Mutex // serialises Read: pion may have two readers (see Read)
	buf     []byte     // bytes read from the connection
	rd      int        // buf[rd:vetted] has been through the gate, ready for pion
	vetted  int        // buf[vetted:] is not yet a complete frame
	readErr error      // the connection's error, returned once vetted bytes run out

	fast   FastPath       // relays data frames without pion; may be nil
	remote netip.AddrPort // the client, as the fast path knows it
	closed sync.Once

	// raw is set once pion has accepted a ConnectionBind: RFC 6062 §4.4
	// turns the connection into a plain byte pipe to the peer, no longer framed.
	raw bool
	// bindPending is set when a ConnectionBind request went to pion: what
	// follows it is peer data if pion accepts the bind, but STUN to inspect
	// if pion refuses it (a bogus bind must not switch the gate off).
	bindPending bool
	// bound is set by Write when pion answers a ConnectionBind with success.
	// pion writes that answer on its read goroutine before it starts copying
	// the data connection, so the next Read sees it.
	bound atomic.Bool

	// sock reads and writes a plain TCP connection with raw system calls
	// (the relay's hot path; see mmsg.Raw); nil for TLS.
	sock *mmsg.Raw

	// reactor, once the connection holds an allocation, reads it in the
	// relay's loop whenever Read needs more bytes (see await).
	reactor    atomic.Pointer[Reactor]
	back       chan struct{} // the reactor hands the connection back: one signal per Watch
	readyFn    func() bool   // ready and released, bound once
	releasedFn func()
	watchMu    sync.Mutex // orders Watch against Close
	closing    bool       // under watchMu: Close has begun, never Watch again

	busy handing // pion holds STUN messages from this connection

	// idle guards the timer that closes the connection once it has held
	// no allocation for the idle timeout (Edge.Released); every
	// allocation or release moves idleEpoch on, disarming older timers.
	idle      sync.Mutex
	idleEpoch uint64
	idleTimer *time.Timer
}

// readConn reads the connection, raw when it can.
func (c *streamConn) readConn(p []byte) (int, error) {
	if c.sock != nil {
		return c.sock.Read(p)
	}
	return c.Conn.Read(p)
}

// writeConn writes the connection, raw when it can. Every writer of the
// connection goes through here (or through the writer Edge.Stream hands
// out, the same one), so messages never interleave.
func (c *streamConn) writeConn(b []byte) (int, error) {
	if c.sock != nil {
		return c.sock.Write(b)
	}
	return c.Conn.Write(b)
}

// Read hands pion vetted bytes, framing and inspecting more as needed.
func (c *streamConn) Read(p []byte) (int, error) {
	// pion reads a bound data connection from its copy goroutine and, once
	// the copy in the other direction ends, from its read loop too.
	c.readMu.Lock()
	defer c.readMu.Unlock()
	c.busy.back(c.e.flight) // pion has answered what it read before
	if !c.handshaken {
		if err := c.handshake(); err != nil {
			return 0, err
		}
	}
	for c.rd == c.vetted {
		if c.bindPending {
			// pion has handled the ConnectionBind it read last: its answer
			// says whether the rest of the stream is data or STUN.
			c.bindPending = false
			c.raw = c.bound.Load()
			if c.raw {
				_ = c.Conn.SetReadDeadline(time.Time{})
			}
		}
		if c.raw {
			return c.readRaw(p)
		}
		if c.rd > 0 { // reuse the buffer from its start
			n := copy(c.buf, c.buf[c.rd:])
			c.buf, c.vetted, c.rd = c.buf[:n], c.vetted-c.rd, 0
		}
		// Frames vetted before bad bytes go to pion first; the next Read
		// meets the bad bytes again and returns the error.
		if err := c.vet(); err != nil && c.rd == c.vetted {
			return 0, err
		}
		if c.rd < c.vetted {
			break
		}
		if c.readErr != nil {
			return 0, c.readErr
		}
		if !c.await() {
			c.fill()
		}
	}
	if !c.busy.hand(c.e.flight) {
		return 0, net.ErrClosed // the server is closing
	}
	n := copy(p, c.buf[c.rd:c.vetted])
	c.rd += n
	return n, nil
}

// fill reads more bytes from the connection, waiting for them.
func (c *streamConn) fill() {
	c.grow()
	n, err := c.readConn(c.buf[len(c.buf):cap(c.buf)])
	c.buf = c.buf[:len(c.buf)+n]
	c.readErr = err
}

// Largest frame on a stream: a STUN message or padded ChannelData with a
// 16-bit length, plus its header.
const maxFrame = 20 + 0xFFFF + 3

// grow makes room to read into, growing the buffer only as far as one
// incomplete frame needs.
func (c *streamConn) grow() {
	if cap(c.buf)-len(c.buf) < 1500 {
		grown := make([]byte, len(c.buf), min(max(2*cap(c.buf), 4096), maxFrame+4096))
		copy(grown, c.buf)
		c.buf = grown
	}
}

// vet moves every complete frame of buf[vetted:] through the gate.
func (c *streamConn) vet() error {
	for {
		rest := c.buf[c.vetted:]
		if len(rest) < 4 {
			return nil
		}
		size, ok := wire.FrameSize(rest)
		if !ok {
			return fmt.Errorf("frame from %v: %w", c.RemoteAddr(), ErrBadFraming)
		}
		if len(rest) < size {
			return nil
		}
		if wire.IsData(rest) && c.offer(rest[:size]) {
			// Relayed. In the common case nothing vetted waits before it,
			// so dropping it costs nothing; else close the gap (rare).
			if c.rd == c.vetted {
				c.rd += size
				c.vetted += size
			} else {
				c.splice(size, nil)
			}
			continue
		}
		if wire.IsChannelData(rest) {
			c.vetted += size
			continue
		}
		if wire.Type(rest) == wire.TypeConnectionBindRequest {
			// The gate may answer it (RFC 6062 §5.4 on a control connection).
			if _, v := c.inspect(rest[:size]); v == gate.Answered {
				c.splice(size, nil)
				continue
			}
			// Hand pion the bind request alone: pion's own framing would
			// swallow peer data sent right behind it. Read decides what
			// the following bytes are once pion has answered.
			c.vetted += size
			c.bindPending = true
			return nil
		}
		// Reservation tokens need no help here: one listener has one
		// allocation table, so pion finds its own reservations.
		out, v := c.inspect(rest[:size])
		switch v {
		case gate.Pass:
			c.vetted += size
		case gate.Rewrite:
			c.splice(size, out)
		case gate.Answered:
			c.splice(size, nil)
		}
	}
}

// offer gives a data frame to the fast path; a panic there drops the frame.
func (c *streamConn) offer(frame []byte) (taken bool) {
	if c.fast == nil {
		return false
	}
	defer func() {
		if r := recover(); r != nil {
			c.e.recovered(r)
			taken = true
		}
	}()
	return c.fast(frame, c.remote)
}

// inspect runs a STUN frame through the gate; a panic there drops the frame.
// The gate gets the connection's own address object, not RemoteAddr's
// copy (kept for pion, see RemoteAddr): a Send indication the fast path
// leaves costs no allocation.
func (c *streamConn) inspect(frame []byte) (out []byte, v gate.Verdict) {
	defer func() {
		if r := recover(); r != nil {
			c.e.recovered(r)
			out, v = nil, gate.Answered
		}
	}()
	return c.e.gate.Inspect(frame, c.Conn.RemoteAddr(), c.LocalAddr(), c)
}

// readRaw serves a data connection: leftover buffered bytes first, then the socket.
func (c *streamConn) readRaw(p []byte) (int, error) {
	if c.rd < len(c.buf) {
		n := copy(p, c.buf[c.rd:])
		c.rd += n
		// Raw bytes need no vetting; keep rd <= vetted for Read.
		c.vetted = c.rd
		return n, nil
	}
	if c.readErr != nil {
		return 0, c.readErr
	}
	return c.Conn.Read(p) // not raw: pion reads a data connection from two goroutines
}

// splice replaces the size-byte frame at vetted with repl (rare: rewritten
// or answered requests only).
func (c *streamConn) splice(size int, repl []byte) {
	tail := append([]byte(nil), c.buf[c.vetted+size:]...)
	c.buf = append(append(c.buf[:c.vetted], repl...), tail...)
	c.vetted += len(repl)
}

// Write sends pion's bytes to the client, noting a ConnectionBind success
// and granted lifetimes, and giving error responses their reason phrase. A
// bound data connection carries peer bytes, which are never touched.
//
// Hot path for everything pion sends on a stream: a two-byte look.
func (c *streamConn) Write(b []byte) (int, error) {
	if c.bound.Load() {
		return c.writeConn(b)
	}
	if wire.IsSTUN(b) && wire.Type(b) == wire.TypeConnectionBindSuccess {
		c.bound.Store(true)
	}
	if out, changed := c.e.gate.Outgoing(b, c.Conn.RemoteAddr(), c.RemoteAddr, c.LocalAddr); changed {
		if _, err := c.writeConn(out); err != nil {
			return 0, err
		}
		return len(b), nil // pion checks that what it wrote was written
	}
	return c.writeConn(b)
}

// Close closes the connection once and forgets it. A reactor reading it
// lets go first, so it never reads a descriptor that was closed (and may
// have been reused), and a Read waiting for it wakes to net.ErrClosed.
func (c *streamConn) Close() error {
	c.closed.Do(func() {
		c.idle.Lock()
		if c.idleTimer != nil {
			c.idleTimer.Stop()
		}
		c.idle.Unlock()
		c.busy.back(c.e.flight)
		c.e.streams.drop(c.RemoteAddr(), c.LocalAddr(), c)
		c.watchMu.Lock()
		c.closing = true
		if r := c.reactor.Load(); r != nil && (*r).Unwatch(c.sock.Fd()) {
			c.back <- struct{}{}
		}
		c.watchMu.Unlock()
	})
	return c.Conn.Close()
}

// RemoteAddr returns the client's address, a new object for every call:
// pion keys an allocation by the one it got with the Allocate request, and
// the relay changes that object once the allocation is deleted
// (relay/retire.go), which must not change the connection's.
func (c *streamConn) RemoteAddr() net.Addr {
	a := c.Conn.RemoteAddr()
	if ta, ok := a.(*net.TCPAddr); ok {
		cp := *ta
		return &cp
	}
	return a
}

// WriteTo lets the gate answer on the connection (the address is implied).
func (c *streamConn) WriteTo(b []byte, _ net.Addr) (int, error) { return c.writeConn(b) }

// TLSPort tells the gate the connection's local port when it is TLS (see
// gate.TLSResponder).
func (c *streamConn) TLSPort() (int, bool) {
	if _, ok := c.Conn.(*tls.Conn); !ok {
		return 0, false
	}
	la, ok := c.Conn.LocalAddr().(*net.TCPAddr)
	if !ok {
		return 0, false
	}
	return la.Port, true
}

// handshake completes a TLS handshake within the timeout, so a client that
// connects and says nothing cannot hold a goroutine and a socket forever.
func (c *streamConn) handshake() error {
	c.handshaken = true
	tc, ok := c.Conn.(*tls.Conn)
	if !ok {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.handshakeTimeout)
	defer cancel()
	if err := tc.HandshakeContext(ctx); err != nil {
		return fmt.Errorf("tls handshake with %v: %w", c.RemoteAddr(), err)
	}
	return nil
}
