package relay

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"

	"golang.org/x/sys/unix"

	"github.com/turnd/turnd/internal/bindings"
	"github.com/turnd/turnd/internal/netaddr"
)

// RFC 6062 relays of routes opened with Open: the relay accepts peers on
// the listener and dials Connects itself, and holds each peer connection
// until the client's ConnectionBind takes it (TakePeer), when the edge
// pipes the client's data connection to it.

// A peer connection nobody binds is closed by whoever keeps the
// CONNECTION-IDs' deadlines (RFC 6062 §5.3: 30 seconds): the allocation
// table expires the record and its owner takes the peer here and closes
// it, so the relay keeps no timer per waiting peer. The pending bound
// (MaxPendingConnects) holds until then, and Close drops what is left.

// acceptor accepts the peers of an opened route's RFC 6062 listener in a
// downlink loop: the listening socket's readiness wakes the loop, so a
// TCP allocation costs no goroutine while no peer comes.
type acceptor struct {
	rl *Relay
	r  *bindings.Route
	l  *tcpListener
	fd int
}

// watchPeers has a loop accept r's peers on l.
func (rl *Relay) watchPeers(r *bindings.Route, l *tcpListener) error {
	d, err := rl.pickLoop()
	if err != nil {
		return err
	}
	raw, err := l.Listener.(*net.TCPListener).SyscallConn()
	if err != nil {
		return fmt.Errorf("watch tcp relay: %w", err)
	}
	a := &acceptor{rl: rl, r: r, l: l, fd: -1}
	if err := raw.Control(func(fd uintptr) { a.fd = int(fd) }); err != nil {
		return fmt.Errorf("watch tcp relay: %w", err)
	}
	loop := Loop{d: d}
	l.unwatch = func() { loop.Unwatch(a.fd) }
	return loop.Watch(a.fd, a.ready, func() {})
}

// ready accepts what waits, a few at a time (level-triggered: the rest
// come next pass). tcpListener.admit admits each (Options.Forbidden, the
// route's permission, the pending bound); PeerArrived gives it its
// CONNECTION-ID (RFC 6062 §5.3). A failing listener leaves the loop, as an
// accept loop would end: left in, it would be ready at every pass.
func (a *acceptor) ready() bool {
	for range perSocket {
		nfd, _, err := unix.Accept4(a.fd, unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC)
		switch {
		case errors.Is(err, unix.EAGAIN):
			return true
		case errors.Is(err, unix.EINTR), errors.Is(err, unix.ECONNABORTED):
			continue
		case err != nil:
			return false
		}
		f := os.NewFile(uintptr(nfd), "relay-peer")
		c, err := net.FileConn(f) // a duplicate, in the runtime's poller
		_ = f.Close()
		if err != nil {
			continue
		}
		if pc := a.l.admit(c); pc != nil {
			a.offer(pc)
		}
	}
	return true
}

// offer asks PeerArrived for pc's CONNECTION-ID and holds it for TakePeer.
func (a *acceptor) offer(pc *peerConn) {
	var id uint32
	ok := false
	if a.rl.opts.PeerArrived != nil {
		id, ok = a.rl.opts.PeerArrived(a.r, netaddr.AddrPort(pc.RemoteAddr()))
	}
	if !ok || !a.rl.hold(a.r, id, pc) {
		_ = pc.Close()
	}
}

// hold keeps pc for TakePeer under id; false if r is not open or id is
// taken.
func (rl *Relay) hold(r *bindings.Route, id uint32, pc *peerConn) bool {
	rl.mu.Lock()
	defer rl.mu.Unlock()
	o := rl.routes[r]
	if o == nil || o.tcp == [2]*tcpListener{} || o.peers[id] != nil {
		return false
	}
	if o.peers == nil {
		o.peers = make(map[uint32]*peerConn)
	}
	o.peers[id] = pc
	return true
}

// Connect dials peer from r's RFC 6062 relay of the peer's family, off the
// caller's goroutine (RFC 6062 §5.2), and calls done when the dial ends:
// nil once the connection waits for TakePeer under id, or why it failed
// (447 when the dial times out). The checks it can make at once return
// an error and done is not called: no relay of the family
// (ErrNotTracked), one of turnd's own sockets (ErrForbiddenPeer), or
// MaxPendingConnects reached (ErrTooManyConnects).
func (v Routes) Connect(r *bindings.Route, peer netip.AddrPort, id uint32, done func(error)) error {
	rl := v.rl
	peer = netaddr.Unmap(peer)
	v6 := bindings.Of(peer.Addr()) == bindings.V6
	rl.mu.Lock()
	var l *tcpListener
	if o := rl.routes[r]; o != nil {
		l = o.tcp[bindings.Of(peer.Addr()).Index()]
	}
	rl.mu.Unlock()
	if l == nil {
		return fmt.Errorf("connect to %v: %w", peer, ErrNotTracked)
	}
	if rl.opts.Forbidden != nil && rl.opts.Forbidden(peer) {
		return fmt.Errorf("connect to %v: %w", peer, ErrForbiddenPeer)
	}
	bind, _, _, err := rl.family(tcpNetwork(v6))
	if err != nil {
		return fmt.Errorf("connect to %v: %w", peer, err)
	}
	t, err := rl.startConnect(l.key)
	if err != nil {
		return fmt.Errorf("connect to %v: %w", peer, err)
	}
	go func() {
		pc, err := rl.dial(tcpNetwork(v6), bind, l.key, t, peer.String())
		rl.awaitResume() // a hand-over under way: see awaitResume
		if err != nil {
			done(err)
			return
		}
		if !rl.hold(r, id, pc) {
			_ = pc.Close()
			done(fmt.Errorf("connect to %v: %w", peer, ErrNotTracked)) // the route closed meanwhile
			return
		}
		done(nil)
	}()
	return nil
}

// TakePeer hands over the peer connection waiting under id for r's
// ConnectionBind (RFC 6062 §5.4), paced and counted in r's tally, or for
// its owner to close it when the CONNECTION-ID expires; false if there is
// none (never offered, or taken).
func (v Routes) TakePeer(r *bindings.Route, id uint32) (io.ReadWriteCloser, bool) {
	rl := v.rl
	rl.mu.Lock()
	defer rl.mu.Unlock()
	o := rl.routes[r]
	if o == nil || o.peers[id] == nil {
		return nil, false
	}
	pc := o.peers[id]
	delete(o.peers, id)
	return pc, true
}
