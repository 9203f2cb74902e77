package edge

import (
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/turnd/turnd/internal/mmsg"
	"github.com/turnd/turnd/internal/netaddr"
)

// Export is what moves to a successor process: descriptions that encode as
// JSON, each naming its descriptor by index into Files (which JSON leaves
// out: the descriptors travel as SCM_RIGHTS, in that order). The files are
// duplicates: the caller closes them once sent; the sockets stay open here
// until Release.
type Export struct {
	// UDP is every socket of every group, group after group, in Listen's order.
	UDP []ExportedUDP
	// Locks are the UDP addresses' locks.
	Locks []ExportedLock
	// Listeners are the TCP, TLS and shared-port listening sockets.
	Listeners []ExportedListener
	// Conns are the plain TCP client connections that move: served by a
	// reader, not TLS, not an RFC 6062 pipe.
	Conns []ExportedConn
	// Pipes are the RFC 6062 data connections that move (ExportPipes).
	Pipes []ExportedPipe `json:",omitempty"`
	Files []*os.File     `json:"-"`

	// moved is what Release closes here; nil in a decoded Export.
	moved *moved
}

// ExportedUDP is one socket of a UDP group.
type ExportedUDP struct {
	Addr  string // the group's address as Listen wrote it
	Group int    // which group, counting from 0 in Listen.UDP's order
	Bound string // the bound address
	File  int
}

// ExportedLock is one UDP address's lock (see Bind).
type ExportedLock struct {
	Key  string // the address it is named after
	File int
}

// ExportedListener is one listening socket.
type ExportedListener struct {
	Addr  string // as Listen wrote it
	Kind  string // KindTCP, KindTLS or KindTCPTLS
	Proxy bool   // its connections may carry PROXY protocol headers
	Bound string
	File  int
}

// ExportedConn is one plain TCP client connection.
type ExportedConn struct {
	// Tuple is the connection's 5-tuple as the allocation table knows it:
	// the PROXY header's client address if Proxied.
	Tuple   netaddr.FiveTuple
	Proxied bool
	// Listener indexes Listeners: where it was accepted (-1: unknown).
	Listener int
	// Unread are the bytes read from it but not yet framed: served first.
	Unread []byte
	// Idle says it holds no allocation (Stream.Idle(true)): its idle
	// timeout runs.
	Idle bool
	File int
}

// moved is what one Export duplicated, for Release.
type moved struct {
	e         *Edge
	s         *Sockets
	udp       []*mmsg.Socket
	locks     []*addrLock
	listeners []*listenerInfo
	conns     []*clientConn
	pipes     []*clientConn // ExportPipes'
}

// Export duplicates the descriptors of everything that moves (every UDP
// socket, address lock and listener of s, and the movable connections of
// this edge accepted on s's listeners, but those stays names: a
// connection whose allocation stays here) and describes them. It is only
// for an edge a Pause has paused fully (every reader parked, every answer
// written). On error it closes the files it made.
func (e *Edge) Export(s *Sockets, stays func(netaddr.FiveTuple) bool) (ex Export, err error) {
	e.own.mu.Lock()
	ok := e.own.hold.ok
	e.own.mu.Unlock()
	if !ok {
		return Export{}, fmt.Errorf("export: %w", ErrNotPaused)
	}
	m := &moved{e: e, s: s}
	defer func() {
		if err != nil {
			_ = closeAll(ex.Files)
			ex = Export{}
		}
	}()
	add := func(f *os.File) int {
		ex.Files = append(ex.Files, f)
		return len(ex.Files) - 1
	}
	group := -1
	for i, sock := range s.UDP {
		if i == 0 || s.udpAddrs[i] != s.udpAddrs[i-1] || sock.LocalAddr().String() != s.UDP[i-1].LocalAddr().String() {
			group++
		}
		f, err := sock.File()
		if err != nil {
			return ex, fmt.Errorf("export: %w", err)
		}
		ex.UDP = append(ex.UDP, ExportedUDP{Addr: s.udpAddrs[i], Group: group, Bound: sock.LocalAddr().String(), File: add(f)})
		m.udp = append(m.udp, sock)
	}
	for _, lk := range s.locks {
		fd, err := unix.FcntlInt(uintptr(lk.fd), unix.F_DUPFD_CLOEXEC, 0)
		if err != nil {
			return ex, fmt.Errorf("export: dup lock of udp %s: %w", lk.key, err)
		}
		ex.Locks = append(ex.Locks, ExportedLock{Key: lk.key, File: add(os.NewFile(uintptr(fd), "lock:"+lk.key))})
		m.locks = append(m.locks, lk)
	}
	index := map[net.Listener]int{}
	for i, li := range s.listeners {
		f, err := li.raw.File()
		if err != nil {
			return ex, fmt.Errorf("export: dup listener %s: %w", li.addr, err)
		}
		ex.Listeners = append(ex.Listeners, ExportedListener{Addr: li.addr, Kind: li.kind, Proxy: li.proxy,
			Bound: li.raw.Addr().String(), File: add(f)})
		m.listeners = append(m.listeners, li)
		for _, pub := range li.public {
			index[pub] = i
		}
	}
	e.own.mu.Lock()
	conns := e.connsLocked()
	e.own.mu.Unlock()
	for _, c := range conns {
		xc, ok := c.export(s, index)
		if !ok || (stays != nil && stays(xc.Tuple)) {
			continue
		}
		f, err := dupConn(c.conn)
		if err != nil {
			return ex, fmt.Errorf("export: connection from %v: %w", xc.Tuple.Client, err)
		}
		xc.File = add(f)
		ex.Conns = append(ex.Conns, xc)
		m.conns = append(m.conns, c)
	}
	ex.moved = m
	e.own.mu.Lock()
	e.own.hold.exported = m
	e.own.mu.Unlock()
	return ex, nil
}

// export describes the connection if it moves: plain TCP accepted on one
// of s's listeners, parked, neither piped nor ending.
func (c *clientConn) export(s *Sockets, index map[net.Listener]int) (ExportedConn, bool) {
	tc, proxied := trackedOf(c.conn)
	if tc == nil || tc.set != &s.streams {
		return ExportedConn{}, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.client.TLS || c.raw == nil || c.pipe != nil || c.closing || c.stopped || !c.hold.Load() {
		return ExportedConn{}, false
	}
	xc := ExportedConn{Tuple: c.client.Tuple, Proxied: proxied, Listener: -1,
		Unread: append([]byte(nil), c.buf[c.start:]...), Idle: c.idleNow}
	if i, ok := index[c.ln]; ok {
		xc.Listener = i
	}
	return xc, true
}

// trackedOf returns the tracked connection under conn, and whether a
// PROXY header named its client.
func trackedOf(conn net.Conn) (*trackedConn, bool) {
	switch c := conn.(type) {
	case *trackedConn:
		return c, false
	case *proxiedConn:
		tc, _ := c.Conn.(*trackedConn)
		return tc, true
	}
	return nil, false
}

// dupConn duplicates a connection's descriptor, as long as it is open.
func dupConn(conn net.Conn) (*os.File, error) {
	sc, ok := conn.(syscall.Conn)
	if !ok {
		return nil, fmt.Errorf("dup %T: %w", conn, errors.ErrUnsupported)
	}
	return mmsg.Dup(sc, "tcp:"+conn.RemoteAddr().String())
}

// nonblocking sets O_NONBLOCK again on what was exported: a successor
// that made its copy blocking (net's File, say) did so on the file
// description both processes share, and this process's poller needs it
// once it reads them again (Resume).
func (m *moved) nonblocking() {
	set := func(sc syscall.Conn) {
		if rc, err := sc.SyscallConn(); err == nil {
			_ = rc.Control(func(fd uintptr) { _ = unix.SetNonblock(int(fd), true) })
		}
	}
	for _, s := range m.udp {
		set(s)
	}
	for _, li := range m.listeners {
		set(li.raw)
	}
	for _, c := range slices.Concat(m.conns, m.pipes) {
		if sc, ok := c.conn.(syscall.Conn); ok {
			set(sc)
		}
	}
}
