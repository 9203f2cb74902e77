package relay

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/turnd/turnd/internal/bindings"
	"github.com/turnd/turnd/internal/mmsg"
)

// An RFC 6062 route moves as its UDP relays do (handover.go): its
// listeners and the peer connections waiting for ConnectionBind go by
// duplicated descriptor, and each bound pair's peer connection goes with
// the edge's pipe it feeds (ExportPeer, AdoptPeer). The kernel objects
// stay the same, so the relayed address, the queued peers and every byte
// in the sockets' buffers carry over.

// TCPRouteFiles are an RFC 6062 route's sockets, duplicated for another
// process: its listeners by Families.Index (nil: no relay of that family)
// and its peer connections waiting for ConnectionBind, by CONNECTION-ID.
// They are the receiver's to close once passed or adopted.
type TCPRouteFiles struct {
	Listeners [2]*os.File
	Pending   map[uint32]*os.File
}

// Close closes every file, for a hand-over that will not use them.
func (tf TCPRouteFiles) Close() error {
	var errs []error
	for _, f := range tf.Listeners {
		if f != nil {
			errs = append(errs, f.Close())
		}
	}
	for _, f := range tf.Pending {
		errs = append(errs, f.Close())
	}
	return errors.Join(errs...)
}

// ExportTCP returns duplicates of r's RFC 6062 listeners and waiting peer
// connections, as Export does for a UDP route: only while paused (the
// loops accept no peer meanwhile: the kernel queues them), and this
// process serves them on until ReleaseTCP or, after Resume, again. A
// route with no RFC 6062 relay here is ErrNotTracked.
func (v Routes) ExportTCP(r *bindings.Route) (TCPRouteFiles, error) {
	rl := v.rl
	var out TCPRouteFiles
	if !rl.isSettled() {
		return out, fmt.Errorf("export tcp relay: %w", ErrNotPaused)
	}
	rl.mu.Lock()
	o := rl.routes[r]
	var lns [2]*tcpListener
	pending := map[uint32]*peerConn{}
	if o != nil {
		lns = o.tcp
		for id, pc := range o.peers {
			pending[id] = pc
		}
	}
	rl.mu.Unlock()
	if lns == [2]*tcpListener{} {
		return out, fmt.Errorf("export tcp relay: %w", ErrNotTracked)
	}
	for i, l := range lns {
		if l == nil {
			continue
		}
		f, err := dupSocket(l.Listener.(*net.TCPListener))
		if err != nil {
			_ = out.Close()
			return TCPRouteFiles{}, fmt.Errorf("export tcp relay %v: %w", l.Addr(), err)
		}
		out.Listeners[i] = f
	}
	out.Pending = make(map[uint32]*os.File, len(pending))
	for id, pc := range pending {
		f, err := dupPeer(pc)
		if err != nil {
			_ = out.Close()
			return TCPRouteFiles{}, err
		}
		out.Pending[id] = f
	}
	return out, nil
}

// ExportPeer returns the route and a duplicate of the peer connection
// TakePeer gave out (peer, as it returned it), for the pipe it feeds to
// move with it; the connection is marked lent, so ReleaseTCP lets go of
// it here. Only while paused; a connection not of this relay is
// ErrNotTracked.
func (v Routes) ExportPeer(peer io.ReadWriteCloser) (*bindings.Route, *os.File, error) {
	rl := v.rl
	if !rl.isSettled() {
		return nil, nil, fmt.Errorf("export peer connection: %w", ErrNotPaused)
	}
	pc, ok := peer.(*peerConn)
	if !ok || pc.rl != rl {
		return nil, nil, fmt.Errorf("export peer connection: %w", ErrNotTracked)
	}
	rl.mu.Lock()
	_, open := pc.r.conns[pc]
	r := pc.r.route
	rl.mu.Unlock()
	if !open {
		return nil, nil, fmt.Errorf("export peer connection: %w", ErrNotTracked)
	}
	f, err := dupPeer(pc)
	if err != nil {
		return nil, nil, err
	}
	rl.mu.Lock()
	pc.lent = true
	rl.mu.Unlock()
	return r, f, nil
}

// dupPeer duplicates a peer connection's descriptor.
func dupPeer(pc *peerConn) (*os.File, error) {
	sc, ok := pc.Conn.(syscall.Conn)
	if !ok {
		return nil, fmt.Errorf("export peer connection %T: %w", pc.Conn, errors.ErrUnsupported)
	}
	f, err := dupSocket(sc)
	if err != nil {
		return nil, fmt.Errorf("export peer connection %v: %w", pc.RemoteAddr(), err)
	}
	return f, nil
}

// dupSocket duplicates a socket's descriptor without touching its file
// description's flags (os.File's Fd would make it blocking for this
// process's poller too).
func dupSocket(sc syscall.Conn) (*os.File, error) { return mmsg.Dup(sc, "relay-tcp") }

// ReleaseTCP takes r's RFC 6062 relay out of this process once another
// serves it (after ExportTCP, ExportPeer and the successor's adoption):
// each listener leaves its loop's epoll set before this process's
// descriptor closes (see drop), the waiting peer connections and the lent
// bound ones close here without a FIN (the successor holds them), and the
// port leaves the table without publishing its tally: its usage moves
// with the allocation table. A bound pair that did not move (its client
// side is TLS) keeps its peer connection and flows on here. Releasing
// what has no RFC 6062 relay here does nothing.
func (v Routes) ReleaseTCP(r *bindings.Route) {
	rl := v.rl
	rl.mu.Lock()
	o := rl.routes[r]
	if o == nil || o.tcp == [2]*tcpListener{} {
		rl.mu.Unlock()
		return
	}
	delete(rl.routes, r)
	lns, pending := o.tcp, o.peers
	o.tcp, o.peers = [2]*tcpListener{}, nil
	var lent []*peerConn
	for _, l := range lns {
		if l == nil {
			continue
		}
		if t := rl.tcp[l.key]; t != nil {
			for pc := range t.conns {
				if pc.lent {
					lent = append(lent, pc)
				}
			}
		}
		delete(rl.tcp, l.key)
	}
	rl.mu.Unlock()
	for _, l := range lns {
		if l == nil {
			continue
		}
		l.once.Do(func() {
			if l.unwatch != nil {
				l.unwatch()
			}
		})
		_ = l.Listener.Close()
	}
	for _, pc := range pending {
		_ = pc.Close()
	}
	for _, pc := range lent {
		_ = pc.Close()
	}
}

// RouteOf returns the route of the RFC 6062 relay a peer connection
// TakePeer gave out belongs to; nil if it is not this relay's.
func (v Routes) RouteOf(peer io.ReadWriteCloser) *bindings.Route {
	pc, ok := peer.(*peerConn)
	if !ok || pc.rl != v.rl {
		return nil
	}
	return pc.r.route
}

// unlend forgets which peer connections ExportPeer lent: after Resume they
// are this process's alone again (the hand-over failed, or ReleaseTCP
// already let go of them), and a later ReleaseTCP must close only what
// its own hand-over lent.
func (rl *Relay) unlend() {
	rl.mu.Lock()
	defer rl.mu.Unlock()
	for _, t := range rl.tcp {
		for pc := range t.conns {
			pc.lent = false
			nonblocking(pc.Conn)
		}
	}
	// A successor adopts through net's FileListener and FileConn, which
	// make the open file both processes share blocking until its copy is
	// made: one that failed in between leaves it so for this process.
	for _, o := range rl.routes {
		for _, l := range o.tcp {
			if l != nil {
				nonblocking(l.Listener)
			}
		}
	}
}

// nonblocking sets O_NONBLOCK on c's descriptor, if it has one.
func nonblocking(c any) {
	if sc, ok := c.(syscall.Conn); ok {
		if rc, err := sc.SyscallConn(); err == nil {
			_ = rc.Control(func(fd uintptr) { _ = unix.SetNonblock(int(fd), true) })
		}
	}
}
