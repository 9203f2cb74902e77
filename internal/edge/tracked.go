package edge

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/turnd/turnd/internal/clientip"
	"github.com/turnd/turnd/internal/netaddr"
)

// wrapTCP makes a bound listener (Bind's, or a passed one) a tracked one
// whose connections join conns; with cfg it speaks TLS.
func wrapTCP(raw net.Listener, cfg *tls.Config, conns *streamConns) net.Listener {
	ln := conns.track(raw)
	if cfg != nil {
		return &tlsListener{trackedListener: ln, cfg: cfg}
	}
	return ln
}

// tlsListener is tls.NewListener over a tracked listener, which Pause can
// interrupt (holdAccept).
type tlsListener struct {
	*trackedListener
	cfg *tls.Config
}

func (l *tlsListener) Accept() (net.Conn, error) {
	c, err := l.trackedListener.Accept()
	if err != nil {
		return nil, err
	}
	return tls.Server(c, l.cfg), nil
}

// holdAccept interrupts a waiting Accept and every later one (on), with
// os.ErrDeadlineExceeded, until it is called again (off).
func (l *trackedListener) holdAccept(on bool) {
	if tl, ok := l.Listener.(*net.TCPListener); ok {
		var t time.Time
		if on {
			t = past
		}
		_ = tl.SetDeadline(t)
	}
}

// closeAll closes sockets and joins their errors.
func closeAll[T interface{ Close() error }](xs []T) error {
	var errs []error
	for _, x := range xs {
		if err := x.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// streamConns keeps the TCP and TLS connections the listeners accepted.
// Closing a listener does not close them: a connection already accepted
// would go on being served (a new Allocate would still succeed, with a fresh
// relay socket) until the client hung up. Close ends them through this set.
type streamConns struct {
	mu      sync.Mutex
	conns   map[*trackedConn]struct{}
	clients clientip.Counts                // connections booked per client and per network
	held    map[netaddr.FiveTuple]struct{} // the 5-tuples live connections hold (claim)
	closed  bool

	limits atomic.Pointer[ConnLimits] // nil: none; replaced by a reload
	// refused is told of each connection closed on accept, with the reason.
	refused func(reason string)
}

// track wraps ln so that every connection it accepts joins the set. It wraps
// the plain TCP listener, under TLS, so the edge still sees a *tls.Conn.
func (s *streamConns) track(ln net.Listener) *trackedListener {
	return &trackedListener{Listener: ln, set: s}
}

// closeTracked closes every tracked connection and any accepted later.
func (s *streamConns) closeTracked() {
	s.mu.Lock()
	conns := make([]net.Conn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c.Conn) // the raw conn: trackedConn.Close would take s.mu again
	}
	s.conns, s.clients, s.held, s.closed = nil, clientip.Counts{}, nil, true
	s.mu.Unlock()
	_ = closeAll(conns)
}

type trackedListener struct {
	net.Listener
	set *streamConns
	// fromProxy, if set, tells connections from trusted PROXY-protocol
	// proxies, whose per-IP booking waits for the header (trackProxied).
	fromProxy func(net.Addr) bool
}

// Accept returns the next connection within the caps; one over them is
// closed at once and the next one waited for, since an error here would end
// ServeStreams' accept loop.
func (l *trackedListener) Accept() (net.Conn, error) {
	for {
		c, err := l.acceptRaw()
		if err != nil {
			return nil, err
		}
		tc := &trackedConn{Conn: c, set: l.set}
		l.set.mu.Lock()
		closed := l.set.closed
		refused := ""
		if !closed {
			if l.fromProxy != nil && l.fromProxy(c.RemoteAddr()) {
				refused = l.set.admitFromProxy()
			} else if tc.ip, refused = l.set.admitConn(c.RemoteAddr()); refused == "" {
				if refused = l.set.claim(tc, c.RemoteAddr()); refused != "" {
					l.set.releaseConn(tc.ip)
				}
			}
			if refused == "" {
				if l.set.conns == nil {
					l.set.conns = make(map[*trackedConn]struct{})
				}
				l.set.conns[tc] = struct{}{}
			}
		}
		l.set.mu.Unlock()
		if refused != "" {
			if l.set.refused != nil {
				l.set.refused(refused)
			}
			_ = c.Close()
			continue
		}
		if closed {
			// Accepted while the server closed: its reader's first read fails and it lets go.
			_ = c.Close()
		}
		return tc, nil
	}
}

type trackedConn struct {
	net.Conn
	set *streamConns
	ip  netip.Addr // booked against the per-client caps; the zero Addr for none
	// tuple is the 5-tuple the connection holds, once claimed: at accept
	// for a direct client, after its header for a proxy's connection.
	tuple   netaddr.FiveTuple
	claimed bool
}

// SyscallConn exposes the TCP socket, so the edge and the relay can read
// and write it with raw system calls (mmsg.Raw).
func (c *trackedConn) SyscallConn() (syscall.RawConn, error) {
	if sc, ok := c.Conn.(syscall.Conn); ok {
		return sc.SyscallConn()
	}
	return nil, fmt.Errorf("raw access to %T: %w", c.Conn, errors.ErrUnsupported)
}

func (c *trackedConn) Close() error {
	c.set.mu.Lock()
	if _, ok := c.set.conns[c]; ok { // once, however often Close is called
		delete(c.set.conns, c)
		c.set.releaseConn(c.ip)
		c.set.unclaim(c)
	}
	c.set.mu.Unlock()
	return c.Conn.Close()
}
