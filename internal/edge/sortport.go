package edge

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// firstByteTimeout bounds how long a connection on a sorting port may stay
// silent, or take to send its PROXY header, before it is closed.
const firstByteTimeout = HandshakeTimeout

// tlsHandshakeRecord is the first byte of every TLS connection (a handshake
// record, RFC 8446 §5.1). No STUN method turnd serves starts with it and no
// ChannelData does (channel numbers start 0x40-0x4F).
const tlsHandshakeRecord = 0x16

// sortingPort is a stream listening socket whose connections need a look
// before ServeStreams gets them: a PROXY protocol header to read
// (listen.proxy_protocol), and on a shared port (listen.tcp_tls) the first byte that says plain TCP
// or TLS. Both happen in a goroutine per connection, so a silent client
// holds up no other, and by peeking and exact reads, so a plain connection
// reaches the edge and its raw fast path with no byte buffered elsewhere.
type sortingPort struct {
	ln    *trackedListener
	tls   *tls.Config        // nil: no TLS side
	proxy *proxyPolicy       // nil: no PROXY protocol on this port
	subs  [2]*sortedListener // plain, tls; nil for a side the port lacks

	closeOnce sync.Once
	done      chan struct{} // closed when the socket stops accepting
	err       error         // why; read after done

	// Pause's and Release's, under mu: the accept goroutine parks while
	// held; released, it returns and the sides serve what it had taken
	// (inflight, sorting or queued) until drained.
	mu       sync.Mutex
	held     bool
	onParked func()        // told once that the goroutine parked
	heldWake chan struct{} // closed to wake it
	released bool
	closing  bool
	exited   bool
	started  bool // the accept goroutine runs: from the first Accept of a side
	inflight int
	drained  chan struct{} // closed once released with nothing in flight
}

// wrapSorting returns a bound listener's (Bind's, or a passed one's) plain
// side (if plain) and its TLS side (if cfg is not nil), each a listener
// ServeStreams serves like any other. Closing either closes the socket.
func wrapSorting(raw net.Listener, plain bool, cfg *tls.Config, proxy *proxyPolicy, conns *streamConns) (plainLn, tlsLn net.Listener) {
	var ln *trackedListener
	if proxy != nil {
		ln = conns.trackProxied(raw, proxy.trusts)
	} else {
		ln = conns.track(raw)
	}
	p := &sortingPort{ln: ln, tls: cfg, proxy: proxy, done: make(chan struct{}), drained: make(chan struct{})}
	if plain {
		p.subs[0] = newSortedListener(p)
		plainLn = p.subs[0]
	}
	if cfg != nil {
		p.subs[1] = newSortedListener(p)
		tlsLn = p.subs[1]
	}
	return plainLn, tlsLn
}

// start starts the accept goroutine, once, when a side is first served:
// a successor must take no connection before it serves (a failed
// hand-over would drop it).
func (p *sortingPort) start() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.started {
		p.started = true
		go p.accept()
	}
}

func (p *sortingPort) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) { // Pause's
				if p.park() {
					continue
				}
				return // released: done stays open for what is in flight
			}
			p.mu.Lock()
			p.exited = true
			parked := p.onParked // a Pause waiting for it waits no more
			p.onParked = nil
			p.mu.Unlock()
			if parked != nil {
				parked()
			}
			p.err = err
			close(p.done)
			return
		}
		p.mu.Lock()
		p.inflight++
		p.mu.Unlock()
		go func() {
			p.sort(c)
			p.sorted()
		}()
	}
}

// sort reads c's PROXY header if the port expects one, then hands c to the
// plain or the TLS side.
func (p *sortingPort) sort(c net.Conn) {
	if p.proxy != nil {
		tc, _ := c.(*trackedConn)
		var ok bool
		if c, ok = p.proxy.admit(c); !ok {
			return
		}
		if tc != nil {
			if refused := tc.set.rebook(tc, c); refused != "" {
				if tc.set.refused != nil {
					tc.set.refused(refused)
				}
				_ = c.Close()
				return
			}
		}
	}
	side := 0
	switch {
	case p.subs[0] == nil:
		side = 1
	case p.subs[1] != nil:
		b, err := peekFirstByte(c, firstByteTimeout)
		if err != nil {
			_ = c.Close()
			return
		}
		if b == tlsHandshakeRecord {
			side = 1
		}
	}
	if side == 1 {
		c = tls.Server(c, p.tls)
	}
	select {
	case p.subs[side].ch <- c:
	case <-p.done:
		_ = c.Close()
	}
}

func (p *sortingPort) close() error {
	p.mu.Lock()
	p.closing = true
	p.wakeLocked()
	p.mu.Unlock()
	var err error
	p.closeOnce.Do(func() { err = p.ln.Close() })
	return err
}

// peekFirstByte waits up to timeout for c's first unread byte and returns
// it without consuming it.
func peekFirstByte(c net.Conn, timeout time.Duration) (byte, error) {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return 0, fmt.Errorf("peek %T: %w", c, errors.ErrUnsupported)
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return 0, fmt.Errorf("peek first byte: %w", err)
	}
	if err := c.SetReadDeadline(time.Now().Add(timeout)); err != nil {
		return 0, fmt.Errorf("peek first byte: %w", err)
	}
	var b [1]byte
	var n int
	var perr error
	err = rc.Read(func(fd uintptr) bool {
		n, _, perr = unix.Recvfrom(int(fd), b[:], unix.MSG_PEEK)
		return perr != unix.EAGAIN
	})
	if err == nil {
		err = perr
	}
	if err == nil && n == 0 {
		err = errClosedBeforeFirstByte
	}
	if err != nil {
		return 0, fmt.Errorf("peek first byte: %w", err)
	}
	return b[0], c.SetReadDeadline(time.Time{})
}

// sortedListener is one side (plain or TLS) of a sortingPort.
type sortedListener struct {
	port *sortingPort
	ch   chan net.Conn

	mu   sync.Mutex
	held bool          // Pause: Accept returns os.ErrDeadlineExceeded
	kick chan struct{} // closed when held, to wake a waiting Accept
}

func newSortedListener(p *sortingPort) *sortedListener {
	return &sortedListener{port: p, ch: make(chan net.Conn), kick: make(chan struct{})}
}

func (l *sortedListener) Accept() (net.Conn, error) {
	for {
		l.mu.Lock()
		held, kick := l.held, l.kick
		l.mu.Unlock()
		if held {
			return nil, fmt.Errorf("accept: %w", os.ErrDeadlineExceeded)
		}
		// Not before: a side first served while paused must not set the
		// port accepting for a Pause that never held it.
		l.port.start()
		select {
		case c := <-l.ch:
			return c, nil
		case <-kick:
		case <-l.port.done:
			if errors.Is(l.port.err, net.ErrClosed) {
				return nil, net.ErrClosed
			}
			return nil, fmt.Errorf("accept: %w", l.port.err)
		}
	}
}

func (l *sortedListener) Close() error   { return l.port.close() }
func (l *sortedListener) Addr() net.Addr { return l.port.ln.Addr() }
