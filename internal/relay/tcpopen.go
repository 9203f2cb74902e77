package relay

import (
	"fmt"
	"io"
	"net/netip"
	"time"

	"github.com/turnd/turnd/internal/bindings"
	"github.com/turnd/turnd/internal/netaddr"
)

// RFC 6062 relays of routes opened with Open: the relay accepts peers on
// the listener and dials Connects itself, and holds each peer connection
// until the client's ConnectionBind takes it (TakePeer), when the edge
// pipes the client's data connection to it.

// bindWait is how long a peer connection waits for its ConnectionBind
// (RFC 6062 §5.3: 30 seconds, then the server closes it).
const bindWait = 30 * time.Second

// waitingPeer is a peer connection offered to the client by a
// CONNECTION-ID.
type waitingPeer struct {
	conn  *peerConn
	timer *time.Timer
}

// drop closes a peer connection that was never taken.
func (p *waitingPeer) drop() {
	p.timer.Stop()
	_ = p.conn.Close()
}

// servePeers accepts peers on l until it closes. tcpListener.Accept
// admits them (Options.Forbidden, the route's permission, the pending
// bound); PeerArrived gives each its CONNECTION-ID (RFC 6062 §5.3).
func (rl *Relay) servePeers(r *bindings.Route, l *tcpListener) {
	for {
		c, err := l.Accept()
		if err != nil {
			return // closed: the route's family ended
		}
		pc := c.(*peerConn)
		var id uint32
		ok := false
		if rl.opts.PeerArrived != nil {
			id, ok = rl.opts.PeerArrived(r, netaddr.AddrPort(pc.RemoteAddr()))
		}
		if !ok || !rl.hold(r, id, pc) {
			_ = pc.Close()
		}
	}
}

// hold keeps pc for TakePeer under id, for bindWait; false if r is not
// open or id is taken.
func (rl *Relay) hold(r *bindings.Route, id uint32, pc *peerConn) bool {
	rl.mu.Lock()
	defer rl.mu.Unlock()
	o := rl.routes[r]
	if o == nil || o.tcp == [2]*tcpListener{} || o.peers[id] != nil {
		return false
	}
	if o.peers == nil {
		o.peers = make(map[uint32]*waitingPeer)
	}
	p := &waitingPeer{conn: pc}
	p.timer = time.AfterFunc(bindWait, func() {
		rl.mu.Lock()
		if o := rl.routes[r]; o != nil && o.peers[id] == p {
			delete(o.peers, id)
		}
		rl.mu.Unlock()
		_ = pc.Close() // taken, it would have stopped this timer
	})
	o.peers[id] = p
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
// ConnectionBind (RFC 6062 §5.4): paced and counted in r's tally; false
// if there is none (never offered, taken, or past bindWait).
func (v Routes) TakePeer(r *bindings.Route, id uint32) (io.ReadWriteCloser, bool) {
	rl := v.rl
	rl.mu.Lock()
	defer rl.mu.Unlock()
	o := rl.routes[r]
	if o == nil || o.peers[id] == nil {
		return nil, false
	}
	p := o.peers[id]
	delete(o.peers, id)
	p.timer.Stop()
	return p.conn, true
}
