package edge

import (
	"fmt"
	"net"
	"os"
	"sync"

	"github.com/turnd/turnd/internal/bindings"
	"github.com/turnd/turnd/internal/netaddr"
)

// Adopted are the client connections AdoptStreams took over: served
// connections of the edge whose readers wait for Start.
type Adopted struct {
	// Clients are the connections' Clients (their Stream is the
	// connection) by 5-tuple, for the allocation table to be restored onto.
	Clients map[netaddr.FiveTuple]*bindings.Client

	conns []*clientConn
	opts  StreamOptions
	once  sync.Once
}

// AdoptStreams makes the connections ex passed (files, indexed by the
// descriptions) connections of this edge, as if ServeStreams had accepted
// them on s's listeners with o: the same tracking, caps and 5-tuple
// claims, Closed callback, reactor, and idle timeout unless they hold an
// allocation; each buffer holds the bytes the old process had read but
// not framed. Nothing reads them until Start, so the allocation table can
// be restored onto Clients first. The files stay the caller's. On error
// the connections it made are closed (without Closed: no allocation is
// theirs yet, and the old process still holds them).
func (e *Edge) AdoptStreams(s *Sockets, ex Export, files []*os.File, o StreamOptions) (*Adopted, error) {
	o.defaults()
	a := &Adopted{Clients: make(map[netaddr.FiveTuple]*bindings.Client, len(ex.Conns)), opts: o}
	for _, xc := range ex.Conns {
		c, err := e.adoptConn(s, xc, files, &a.opts)
		if err != nil {
			for _, c := range a.conns {
				c.leave()
			}
			return nil, err
		}
		a.conns = append(a.conns, c)
		a.Clients[c.client.Tuple] = &c.client
	}
	return a, nil
}

// adoptConn makes one passed connection a connection of the edge, unread.
func (e *Edge) adoptConn(s *Sockets, xc ExportedConn, files []*os.File, o *StreamOptions) (*clientConn, error) {
	f, err := passedFile(files, xc.File)
	if err != nil {
		return nil, err
	}
	nc, err := net.FileConn(f)
	if err != nil {
		return nil, fmt.Errorf("adopt connection from %v: %w", xc.Tuple.Client, err)
	}
	tcp, ok := nc.(*net.TCPConn)
	if !ok || netaddr.AddrPort(tcp.LocalAddr()) != xc.Tuple.Server ||
		!xc.Proxied && netaddr.AddrPort(tcp.RemoteAddr()) != xc.Tuple.Client {
		_ = nc.Close()
		return nil, fmt.Errorf("adopt connection from %v: %w", xc.Tuple.Client, ErrBadExport)
	}
	client := tcp.RemoteAddr()
	if xc.Proxied {
		client = net.TCPAddrFromAddrPort(xc.Tuple.Client)
	}
	tc, err := s.streams.adopt(tcp, client)
	if err != nil {
		_ = tcp.Close()
		return nil, err
	}
	var conn net.Conn = tc
	if xc.Proxied {
		conn = &proxiedConn{Conn: tc, client: client.(*net.TCPAddr)}
	}
	c := e.newConn(conn, o, s.passed[xc.Listener])
	c.buf = make([]byte, len(xc.Unread), max(4096, len(xc.Unread)+1500))
	copy(c.buf, xc.Unread)
	c.idleNow = xc.Idle
	if !e.addConn(c) {
		_ = conn.Close()
		return nil, fmt.Errorf("adopt connection from %v: %w", xc.Tuple.Client, ErrStopping)
	}
	return c, nil
}

// Start starts the adopted connections' readers, once: each first serves
// the complete frames its buffer holds, without waiting for more bytes.
func (a *Adopted) Start() {
	a.once.Do(func() {
		for _, c := range a.conns {
			c.startAdopted(&a.opts)
		}
	})
}

// startAdopted arms the idle timeout unless the connection holds an
// allocation and starts its reader, which serves buf first.
func (c *clientConn) startAdopted(o *StreamOptions) {
	c.Idle(c.idleNow)
	if c.raw != nil && o.Reactor != nil {
		if c.reactor = o.Reactor(); c.reactor != nil {
			c.readyFn, c.releasedFn = c.ready, c.released
			c.mu.Lock()
			c.looped = true
			c.mu.Unlock()
			c.kick()
			return
		}
	}
	go c.readLoop()
}

// adopt books a passed connection, seen with the client address client:
// against the per-client counts and its 5-tuple's claim, never refused
// (it is a live client's).
func (s *streamConns) adopt(c net.Conn, client net.Addr) (*trackedConn, error) {
	tc := &trackedConn{Conn: c, set: s}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, fmt.Errorf("adopt connection from %v: %w", client, net.ErrClosed)
	}
	if ta, ok := client.(*net.TCPAddr); ok {
		tc.ip = netaddr.IP(ta)
		if tc.ip.IsValid() {
			s.clients.Add(tc.ip)
		}
	}
	if refused := s.claim(tc, client); refused != "" {
		s.releaseConn(tc.ip)
		return nil, fmt.Errorf("adopt connection from %v: 5-tuple held twice: %w", client, ErrBadExport)
	}
	if s.conns == nil {
		s.conns = make(map[*trackedConn]struct{})
	}
	s.conns[tc] = struct{}{}
	return tc, nil
}
