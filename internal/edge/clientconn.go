package edge

import (
	"context"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/turnd/turnd/internal/bindings"
	"github.com/turnd/turnd/internal/mmsg"
)

// clientConn is one TCP or TLS client connection of the own plane: read by
// one reader for its whole life (its relay loop, or its own goroutine),
// framed once, written through its outbox when the socket cannot take a
// message at once. It is the bindings.Stream the handler and the relay
// write to.
type clientConn struct {
	e      *Edge
	conn   net.Conn
	ln     net.Listener // the listener ServeStreams accepted it on (Export names it)
	raw    *mmsg.Raw    // plain TCP; nil: every message goes through the outbox
	client bindings.Client
	fast   FastPath
	h      Handler
	closed func(*bindings.Client) // StreamOptions.Closed; nil: none
	// reactor, if not nil, reads a plain TCP connection from accept (see
	// Reactor); readyFn and releasedFn are its callbacks, bound once.
	reactor          Reactor
	readyFn          func() bool
	releasedFn       func()
	afterFunc        func(time.Duration, func()) (stop func() bool)
	handshakeTimeout time.Duration

	// The reader's alone: one reader at a time by construction.
	buf   []byte // buf[start:] is not yet framed
	start int

	out outbox

	watchMu sync.Mutex // orders watch against the teardown's Unwatch and close

	mu       sync.Mutex
	serving  bool               // the reader is handling frames: Close leaves the teardown to it
	looped   bool               // read by the reactor (else by a goroutine)
	watching bool               // in the reactor's set
	paused   bool               // the reader waits for the outbox to empty
	stopped  bool               // Stop: read no more
	closing  bool               // Close has begun
	pipe     io.ReadWriteCloser // RFC 6062: set during a Serve by Pipe
	ps       pipeState          // the pipe's copying, once it runs (pipehold.go)
	resume   chan struct{}      // wakes a paused goroutine reader
	idle     uint64             // moves on with every Idle call, disarming older timers
	idleStop func() bool
	idleNow  bool // the last Idle said true: no allocation (Export)
	torn     sync.Once

	// Pause's (connhold.go): hold stops the reader after the frame in
	// hand; the rest under mu.
	hold       atomic.Bool
	inReader   bool          // a goroutine's readLoop reads it
	parkedR    bool          // that readLoop is parked at its top
	unwatching bool          // Pause is taking it out of its relay loop
	waitEpoch  uint64        // Pause waits for its reader to park (under mu)
	wake       chan struct{} // wakes a parked readLoop
}

var _ bindings.Stream = (*clientConn)(nil)

// Write sends one whole message to the client. It never waits: a plain
// TCP socket is tried at once, and what it cannot take (or anything for
// TLS) is copied into the outbox for the connection's flusher; a full
// outbox drops the message (ErrStreamBusy, counted in DroppedAnswers).
func (c *clientConn) Write(b []byte) (int, error) {
	c.out.mu.Lock()
	if c.raw != nil && !c.out.flushing && c.raw.TryWrite(b) {
		c.out.mu.Unlock()
		return len(b), nil
	}
	if !c.out.putLocked([][]byte{b}) {
		c.out.mu.Unlock()
		c.e.own.dropped.Add(1)
		return 0, ErrStreamBusy
	}
	start := c.out.startLocked()
	c.out.mu.Unlock()
	if start {
		go c.flush()
	}
	return len(b), nil
}

// TryWritev sends downlink frames now, or none: a plain TCP connection
// whose outbox holds an answer is busy, and a TLS one takes them into its
// outbox while there is room.
//
// Hot path: one call per relayed packet (or batch); no allocation.
func (c *clientConn) TryWritev(frames [][]byte) bool {
	if c.raw != nil {
		return !c.out.active.Load() && c.raw.TryWritev(frames)
	}
	c.out.mu.Lock()
	ok := c.out.putLocked(frames)
	start := ok && c.out.startLocked()
	c.out.mu.Unlock()
	if start {
		go c.flush()
	}
	return ok
}

// flush is the connection's flusher: a plain TCP connection's runs until
// its outbox is empty, then lets the reader read again; any other's stays
// parked on its outbox, so the downlink starts no goroutine per packet.
func (c *clientConn) flush() {
	var err error
	if c.raw != nil {
		err = c.out.flush(c.raw.Write, false, nil)
	} else {
		err = c.out.flush(c.conn.Write, true, c.e.own.stopped)
	}
	if err != nil {
		_ = c.Close()
		return
	}
	if c.raw != nil {
		c.resumeReading()
	}
}

// Idle says whether the connection holds no allocation: while it holds
// none, it is closed once SetIdleTimeout's duration has passed, so a client
// cannot keep a socket by allocating once and letting the allocation end.
func (c *clientConn) Idle(idle bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.idle++
	c.idleNow = idle
	if c.idleStop != nil {
		c.idleStop()
		c.idleStop = nil
	}
	d := time.Duration(c.e.own.idle.Load())
	if !idle || d <= 0 || c.closing {
		return
	}
	epoch := c.idle
	c.idleStop = c.afterFunc(d, func() {
		c.mu.Lock()
		still := c.idle == epoch
		c.mu.Unlock()
		if still {
			_ = c.Close()
		}
	})
}

// Pipe makes the connection a data pipe to peer once the message being
// served is handled (RFC 6062 §5.4): the bytes already read behind it go
// to peer first. It must be called while the handler serves a message of
// this connection.
func (c *clientConn) Pipe(peer io.ReadWriteCloser) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.pipe = peer
	c.idle++
	if c.idleStop != nil { // a data connection holds its allocation's peer
		c.idleStop()
		c.idleStop = nil
	}
}

// Close ends the connection. Called while its reader handles a message
// (by the handler, or another goroutine), it leaves the teardown to the
// reader; a connection its relay loop reads is torn down from another
// goroutine, so Close may be called on any loop.
func (c *clientConn) Close() error {
	c.mu.Lock()
	if c.closing {
		c.mu.Unlock()
		return nil
	}
	c.closing = true
	serving := c.serving
	c.mu.Unlock()
	switch {
	case serving:
	case c.reactor != nil:
		go c.teardown()
	default:
		c.teardown()
	}
	return nil
}

// teardown forgets the connection and closes it, once. It must not run on
// the reactor's goroutine: it waits for the reactor to let go of the
// descriptor, so that the descriptor is never closed under it.
func (c *clientConn) teardown() {
	c.torn.Do(func() {
		if peer := c.forget(); peer != nil {
			_ = peer.Close()
		}
		if c.closed != nil {
			c.closed(&c.client)
		}
	})
}

// forget takes the connection out of this process (the edge's books, its
// idle timer, its relay loop) and closes this process's descriptor; it
// returns the RFC 6062 peer it was piped to, if any. Run once, under torn.
func (c *clientConn) forget() (peer io.Closer) {
	c.e.dropConn(c)
	c.mu.Lock()
	c.closing = true
	c.idle++
	if c.idleStop != nil {
		c.idleStop()
	}
	peer = c.pipe
	c.mu.Unlock()
	close(c.out.done)
	c.watchMu.Lock()
	if c.reactor != nil {
		c.reactor.Unwatch(c.raw.Fd())
	}
	_ = c.conn.Close()
	c.watchMu.Unlock()
	return peer
}

// waitWritten waits until every answer the connection took is written:
// its outbox, then (plain TCP) the remainder a TryWrite left to mmsg.Raw's
// background writer, which a Write queues behind. It returns ctx's error
// if ctx ends first; a connection that is gone has nothing left to write.
func (c *clientConn) waitWritten(ctx context.Context) error {
	if err := c.out.waitEmpty(ctx); err != nil || c.raw == nil {
		return err
	}
	written := make(chan struct{})
	go func() { // ends with the connection if ctx ends first
		_, _ = c.raw.Write(nil)
		close(written)
	}()
	select {
	case <-c.out.done:
		return nil
	default:
	}
	return await(ctx, written)
}

// halt is Stop for this connection: its reader returns after the message
// in hand, and nothing reads it again. true means a relay loop reads it:
// the caller must unwatch it, which waits for that message.
func (c *clientConn) halt(past time.Time) (inLoop bool) {
	c.mu.Lock()
	c.stopped = true
	looped, watching, piped := c.looped, c.watching, c.pipe != nil
	c.mu.Unlock()
	switch {
	case piped:
		return false // a data connection carries no requests: it flows on
	case looped && watching:
		return true
	}
	_ = c.conn.SetReadDeadline(past)
	return false
}

// unwatch takes a halted connection out of its relay loop; it returns once
// ready is not running, so the message in hand is served.
func (c *clientConn) unwatch() {
	c.reactor.Unwatch(c.raw.Fd())
	c.mu.Lock()
	c.watching = false
	c.mu.Unlock()
}
