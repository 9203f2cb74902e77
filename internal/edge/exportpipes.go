package edge

import (
	"fmt"
	"io"
	"net"
	"os"

	"github.com/turnd/turnd/internal/netaddr"
)

// ExportedPipe is one RFC 6062 client data connection piped to a peer
// connection: what a successor needs to pipe it again, once it has the
// peer connection too (which the relay exports: Peer names it here).
type ExportedPipe struct {
	// Tuple is the data connection's 5-tuple: the PROXY header's client
	// address if Proxied.
	Tuple   netaddr.FiveTuple
	Proxied bool
	// Listener indexes Listeners: where it was accepted (-1: unknown).
	Listener int
	File     int
	// Peer is the peer connection it is piped to, as Pipe was given it.
	Peer io.ReadWriteCloser `json:"-"`
}

// ExportPipes adds to ex (this edge's Export of s, in the current Pause)
// the RFC 6062 pipes that move: plain TCP data connections accepted on
// s's listeners, both directions parked, whose peer connection move
// accepts (its allocation moves too). A TLS one stays, and so does any
// move refuses: both flow on here after Release. On error ex is as before.
func (e *Edge) ExportPipes(s *Sockets, ex *Export, move func(peer io.ReadWriteCloser) bool) error {
	m := ex.moved
	if m == nil || m.e != e || m.s != s {
		return fmt.Errorf("export pipes: %w", ErrBadExport)
	}
	e.own.mu.Lock()
	ok := e.own.hold.ok && e.own.hold.exported == m
	conns := e.connsLocked()
	e.own.mu.Unlock()
	if !ok {
		return fmt.Errorf("export pipes: %w", ErrNotPaused)
	}
	index := map[net.Listener]int{}
	for i, li := range m.listeners {
		for _, pub := range li.public {
			index[pub] = i
		}
	}
	var pipes []ExportedPipe
	var files []*os.File
	var moved []*clientConn
	for _, c := range conns {
		xp, ok := c.exportPipe(s, index)
		if !ok || !move(xp.Peer) {
			continue
		}
		f, err := dupConn(c.conn)
		if err != nil {
			_ = closeAll(files)
			return fmt.Errorf("export pipes: data connection from %v: %w", xp.Tuple.Client, err)
		}
		xp.File = len(ex.Files) + len(files)
		pipes, files, moved = append(pipes, xp), append(files, f), append(moved, c)
	}
	ex.Pipes = append(ex.Pipes, pipes...)
	ex.Files = append(ex.Files, files...)
	m.pipes = append(m.pipes, moved...)
	return nil
}

// exportPipe describes the connection if it is a pipe that can move:
// plain TCP accepted on one of s's listeners, both directions parked.
func (c *clientConn) exportPipe(s *Sockets, index map[net.Listener]int) (ExportedPipe, bool) {
	tc, proxied := trackedOf(c.conn)
	if tc == nil || tc.set != &s.streams {
		return ExportedPipe{}, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.ps
	if c.client.TLS || c.pipe == nil || c.closing || !p.held || p.moved || p.done == nil ||
		!p.live[pipeUp] || !p.live[pipeDown] || p.epochs != [2]uint64{} {
		return ExportedPipe{}, false // a TLS one, ending, or not parked
	}
	xp := ExportedPipe{Tuple: c.client.Tuple, Proxied: proxied, Listener: -1, Peer: c.pipe}
	if i, ok := index[c.ln]; ok {
		xp.Listener = i
	}
	return xp, true
}

// AdoptPipes makes the pipes ex passed (files, indexed by the
// descriptions) data connections of this edge piped to peers (one for
// each of ex.Pipes, adopted by the relay), as if accepted on s's
// listeners with o and bound by a ConnectionBind here: the same tracking,
// caps and 5-tuple claims and Closed callback, no idle timeout. Nothing is
// copied until start is called. On error the connections it made leave
// (without Closed), and the peers stay the caller's.
func (e *Edge) AdoptPipes(s *Sockets, ex Export, files []*os.File, peers []io.ReadWriteCloser,
	o StreamOptions) (start func(), err error) {
	if len(peers) != len(ex.Pipes) {
		return nil, fmt.Errorf("adopt pipes: %d peers for %d pipes: %w", len(peers), len(ex.Pipes), ErrBadExport)
	}
	o.defaults()
	var conns []*clientConn
	for i, xp := range ex.Pipes {
		xc := ExportedConn{Tuple: xp.Tuple, Proxied: xp.Proxied, Listener: xp.Listener, File: xp.File}
		c, err := e.adoptConn(s, xc, files, &o)
		if err != nil {
			for _, c := range conns {
				c.leave()
			}
			return nil, fmt.Errorf("adopt pipe: %w", err)
		}
		c.mu.Lock()
		c.pipe = peers[i]
		c.mu.Unlock()
		conns = append(conns, c)
	}
	return func() {
		for _, c := range conns {
			go c.runPipe()
		}
	}, nil
}
