package server

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// firstByteTimeout bounds how long a connection on a shared TCP+TLS port
// may stay silent before it says which of the two it speaks.
const firstByteTimeout = tlsHandshakeTimeout

// tlsHandshakeRecord is the first byte of every TLS connection (a handshake
// record, RFC 8446 §5.1). No STUN method turnd serves starts with it and no
// ChannelData does (channel numbers start 0x40-0x4F).
const tlsHandshakeRecord = 0x16

// sharedPort serves plain TCP and TLS on one listening socket
// (listen.tcp_tls). Each connection's first byte is peeked, not read, so a
// plain connection reaches the gate untouched (its raw fast path included)
// and a TLS one gets the whole ClientHello.
type sharedPort struct {
	ln   net.Listener
	cfg  *tls.Config
	subs [2]*sortedListener // plain, tls

	closeOnce sync.Once
	done      chan struct{} // closed when the socket stops accepting
	err       error         // why; read after done
}

// listenShared binds addr and returns its plain and its TLS side, each a
// listener pion serves like any other. Closing either closes the socket.
func listenShared(addr string, cfg *tls.Config, conns *streamConns) (plain, secure net.Listener, err error) {
	raw, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, nil, fmt.Errorf("listen tcp+tls %s: %w", addr, err)
	}
	p := &sharedPort{ln: conns.track(raw), cfg: cfg, done: make(chan struct{})}
	for i := range p.subs {
		p.subs[i] = &sortedListener{port: p, ch: make(chan net.Conn)}
	}
	go p.accept()
	return p.subs[0], p.subs[1], nil
}

func (p *sharedPort) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			p.err = err
			close(p.done)
			return
		}
		// Sorted in its own goroutine: a silent client must not hold up the next.
		go p.sort(c)
	}
}

// sort hands c to the plain or the TLS side by its first byte.
func (p *sharedPort) sort(c net.Conn) {
	b, err := peekFirstByte(c, firstByteTimeout)
	if err != nil {
		_ = c.Close()
		return
	}
	sub := p.subs[0]
	if b == tlsHandshakeRecord {
		sub = p.subs[1]
		c = tls.Server(c, p.cfg)
	}
	select {
	case sub.ch <- c:
	case <-p.done:
		_ = c.Close()
	}
}

func (p *sharedPort) close() error {
	var err error
	p.closeOnce.Do(func() { err = p.ln.Close() })
	return err
}

// peekFirstByte waits up to timeout for c's first byte and returns it
// without consuming it.
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

// errClosedBeforeFirstByte: the client hung up without a byte.
var errClosedBeforeFirstByte = errors.New("closed before the first byte")

// sortedListener is one side (plain or TLS) of a sharedPort.
type sortedListener struct {
	port *sharedPort
	ch   chan net.Conn
}

func (l *sortedListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.ch:
		return c, nil
	case <-l.port.done:
		if errors.Is(l.port.err, net.ErrClosed) {
			return nil, net.ErrClosed
		}
		return nil, fmt.Errorf("accept tcp+tls: %w", l.port.err)
	}
}

func (l *sortedListener) Close() error   { return l.port.close() }
func (l *sortedListener) Addr() net.Addr { return l.port.ln.Addr() }
