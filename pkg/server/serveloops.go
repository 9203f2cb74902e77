package server

import (
	"fmt"
	"net"
	"sync"
	"sync/atomic"
)

// loopWatch catches a pion serve loop (a UDP socket's read loop, a TCP or
// TLS listener's accept loop) that ends while the server is not closing:
// pion returns from such a loop on any error and logs it only at debug
// level, leaving that address deaf while the process looks healthy.
type loopWatch struct {
	closing atomic.Bool
	once    sync.Once
	failed  chan error // holds the first failure
}

func newLoopWatch() *loopWatch { return &loopWatch{failed: make(chan error, 1)} }

// fail records err as the server's failure unless Close caused it.
func (w *loopWatch) fail(err error) {
	if w.closing.Load() {
		return
	}
	w.once.Do(func() { w.failed <- err })
}

// watchedPacketConn reports the read error that ends pion's read loop.
// Only packets pion handles pass here: the fast path relays inside the edge.
type watchedPacketConn struct {
	net.PacketConn
	w *loopWatch
}

func (c watchedPacketConn) ReadFrom(p []byte) (int, net.Addr, error) {
	n, addr, err := c.PacketConn.ReadFrom(p)
	if err != nil {
		c.w.fail(fmt.Errorf("read udp %s: %w", c.LocalAddr(), err))
	}
	return n, addr, err
}

// watchedListener reports the accept error that ends pion's accept loop.
type watchedListener struct {
	net.Listener
	w *loopWatch
}

func (l watchedListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		l.w.fail(fmt.Errorf("accept %s: %w", l.Addr(), err))
	}
	return c, err
}
