package relay

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"time"

	"github.com/pion/transport/v5/reuseport"

	"github.com/turnd/turnd/internal/bindings"
	"github.com/turnd/turnd/internal/netaddr"
	"github.com/turnd/turnd/internal/traffic"
)

// RFC 6062 TCP relays. Their listener and the outgoing Connect sockets
// share the relay port with SO_REUSEPORT, as RFC 6062 §5.2 requires; the
// kernel would then let a second allocation bind the same port too, and
// split inbound peer connections between the two. So the port table
// (Relay.tcp) is what gives a port to one allocation only.

// DefaultConnectTimeout bounds the dial of a Connect request: RFC 6062 §5.2
// says the timeout MUST be at least 30 seconds.
const DefaultConnectTimeout = 30 * time.Second

// MaxPendingConnects bounds the peer connections of one TCP allocation that
// are being dialled (Connect) or, dialled or accepted, wait for their
// ConnectionBind: each holds a socket and pion keeps an unbound one for 30
// seconds.
const MaxPendingConnects = 8

// tcpRelay is the bookkeeping of one RFC 6062 allocation; under Relay.mu.
type tcpRelay struct {
	client    clientKey
	hasClient bool
	route     *bindings.Route        // permissions, channels and the tally (shared with traffic)
	opened    bool                   // by Open: no deletion report follows its end
	pending   int                    // peer connections dialling or waiting for ConnectionBind
	conns     map[*peerConn]struct{} // open peer connections, for Revoke
	traffic   *tcpTraffic            // their bytes and rate (tcpusage.go)
}

// AllocateTCP makes the listener of an RFC 6062 TCP relay, on network
// ("tcp4" or "tcp6") and port (0: any in the range).
func (rl *Relay) AllocateTCP(network string, port int) (net.Listener, net.Addr, error) {
	tl, addr, err := rl.listenTCP(network, port, nil)
	if err != nil {
		return nil, nil, err
	}
	return tl, net.TCPAddrFromAddrPort(addr), nil
}

// listenTCP makes the listener of an RFC 6062 relay of route (nil: a
// fresh one, for pion) and returns the address to advertise.
func (rl *Relay) listenTCP(network string, port int, route *bindings.Route) (*tcpListener, netip.AddrPort, error) {
	bind, external, v6, err := rl.family(network)
	if err != nil {
		return nil, netip.AddrPort{}, err
	}
	lc := net.ListenConfig{Control: reuseport.Control}
	var ln net.Listener
	var key liveKey
	err = rl.eachPort(port, v6, false, func(port int) error {
		k := liveKey{v6: v6, port: port}
		if !rl.claimTCP(k, route) {
			return ErrNoFreePort
		}
		l, lerr := lc.Listen(context.Background(), network, net.JoinHostPort(bind.String(), strconv.Itoa(port)))
		if lerr != nil {
			rl.releaseTCP(k)
			return lerr
		}
		ln, key = l, k
		return nil
	})
	if err != nil {
		return nil, netip.AddrPort{}, fmt.Errorf("allocate tcp relay: %w", err)
	}
	tl := &tcpListener{Listener: ln, rl: rl, key: key}
	rl.setListener(key, tl)
	return tl, addrPort(external, ln.Addr().(*net.TCPAddr).Port), nil
}

// claimTCP takes port k for a TCP relay of route (nil: a fresh one) if no
// relay of any kind holds it.
func (rl *Relay) claimTCP(k liveKey, route *bindings.Route) bool {
	rl.mu.Lock()
	defer rl.mu.Unlock()
	if rl.live[k] != nil || rl.held[k] != nil || rl.tcp[k] != nil {
		return false
	}
	r := &tcpRelay{route: route, opened: route != nil}
	if route == nil {
		r.route = &bindings.Route{}
	}
	r.traffic = newTCPTraffic(r.route)
	rl.tcp[k] = r
	return true
}

// releaseTCP gives port k back.
func (rl *Relay) releaseTCP(k liveKey) {
	var peers []*peerConn
	rl.mu.Lock()
	if r := rl.tcp[k]; r != nil && r.hasClient && rl.tcpByClient[r.client] == r {
		delete(rl.tcpByClient, r.client)
	}
	if r := rl.tcp[k]; r != nil && r.opened {
		r.traffic.end()
		r.route.Usage.Flush(rl.opts.Counters)
		// RFC 6062 §5: the peer data connections go with their allocation
		// (the edge then closes each client data connection piped to one).
		for pc := range r.conns {
			peers = append(peers, pc)
		}
	} else if r != nil {
		rl.retireTCP(k, r)
	}
	delete(rl.tcp, k)
	rl.mu.Unlock()
	for _, pc := range peers {
		_ = pc.Close()
	}
}

// tcpHolds reports whether a TCP relay holds port.
func (rl *Relay) tcpHolds(v6 bool, port int) bool {
	rl.mu.Lock()
	defer rl.mu.Unlock()
	return rl.tcp[liveKey{v6: v6, port: port}] != nil
}

// tcpListener gives its port back to the table when pion closes it.
type tcpListener struct {
	net.Listener
	rl   *Relay
	key  liveKey
	once sync.Once
	// unwatch takes an opened route's listener out of the loop that
	// accepts its peers (tcpopen.go); nil for pion's, which pion accepts.
	unwatch func()
}

// Accept returns the next peer connection pion may offer its client
// (ConnectionAttempt). A peer the relay refuses is closed here, counted by
// reason and not logged: each knock at a relay port would otherwise be a
// line pion writes. Peer connections waiting for their ConnectionBind
// count against the same bound as Connects: past it, a peer's connection
// is closed at once, so no peer can pile up sockets the client never binds.
func (l *tcpListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if pc := l.admit(c); pc != nil {
			return pc, nil
		}
	}
}

// admit returns a peer's connection counted on its allocation, or closes
// it and counts why it was refused (nil).
func (l *tcpListener) admit(c net.Conn) *peerConn {
	r, refused := l.rl.admitPeer(l.key, c.RemoteAddr())
	if r == nil {
		l.rl.opts.Counters.PeerConnsRefused[refused].Add(1)
		_ = c.Close()
		return nil
	}
	return l.rl.adopt(l.key, r, c)
}

// admitPeer counts a peer's connection to the relay of k against its
// pending bound and returns the allocation it was counted on, or nil and
// why it is refused.
func (rl *Relay) admitPeer(k liveKey, peer net.Addr) (*tcpRelay, traffic.PeerRefusal) {
	// pion would offer a peer a reload denied to the client while its
	// own permission lasts.
	if rl.forbiddenTCP(peer) {
		return nil, traffic.PeerForbidden
	}
	// pion checks its own permissions too, but logs every peer it closes.
	if !rl.permitsTCP(k, netaddr.IP(peer)) {
		return nil, traffic.PeerNoPermission
	}
	r, err := rl.startConnect(k)
	switch {
	case errors.Is(err, ErrTooManyConnects):
		return nil, traffic.PeerPendingLimit
	case err != nil:
		return nil, traffic.PeerNoPermission // the allocation went, and its permissions with it
	}
	return r, 0
}

// forbiddenTCP reports whether the Forbidden option refuses a TCP peer.
func (rl *Relay) forbiddenTCP(addr net.Addr) bool {
	ta, ok := addr.(*net.TCPAddr)
	return ok && rl.opts.Forbidden != nil && rl.opts.Forbidden(netaddr.AddrPort(ta))
}

func (l *tcpListener) Close() error {
	l.once.Do(func() {
		if l.unwatch != nil {
			l.unwatch() // before the descriptor closes: see Loop.Unwatch
		}
		l.rl.releaseTCP(l.key)
	})
	return l.Listener.Close()
}

// tcpKey is the table key of an RFC 6062 relay advertised as relayAddr.
func tcpKey(relayAddr net.Addr) (liveKey, bool) {
	ta, ok := relayAddr.(*net.TCPAddr)
	if !ok {
		return liveKey{}, false
	}
	return liveKey{v6: ta.IP.To4() == nil, port: ta.Port}, true
}

// Connect dials the outgoing TCP connection of an RFC 6062 Connect request
// to peer, from the port of the relay advertised as relayAddr.
// It runs on the goroutine of the client's control connection (pion
// handles Connect there), which reads no other client; the dial has a
// deadline (pion answers 447 when it passes) and the allocation's pending
// Connects are bounded.
func (rl *Relay) Connect(network string, relayAddr, peer net.Addr) (net.Conn, error) {
	bind, _, _, err := rl.family(network)
	if err != nil {
		return nil, err
	}
	k, ok := tcpKey(relayAddr)
	if !ok {
		// A Connect on a UDP allocation (RFC 6062 §5.2: the gate answers it 400).
		return nil, fmt.Errorf("connect from relay %v: %w", relayAddr, ErrNotTracked)
	}
	if rl.forbiddenTCP(peer) {
		return nil, fmt.Errorf("connect to %v: %w", peer, ErrForbiddenPeer)
	}
	r, err := rl.startConnect(k)
	if err != nil {
		return nil, fmt.Errorf("connect from relay %v: %w", relayAddr, err)
	}
	conn, err := rl.dial(network, bind, k, r, peer.String())
	if err != nil {
		return nil, err
	}
	return conn, nil
}

// dial connects from the port of relay k to peer, for a Connect counted on
// r; the Connect stops being pending if the dial fails.
func (rl *Relay) dial(network string, bind net.IP, k liveKey, r *tcpRelay, peer string) (*peerConn, error) {
	timeout := rl.opts.ConnectTimeout
	if timeout <= 0 {
		timeout = DefaultConnectTimeout
	}
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: bind, Port: k.port}, Control: reuseport.Control, Timeout: timeout}
	conn, err := d.Dial(network, peer)
	if err != nil {
		rl.endConnect(k, r)
		return nil, fmt.Errorf("connect tcp relay to peer: %w", err)
	}
	return rl.adopt(k, r, conn), nil
}

// startConnect counts a Connect against its allocation's bound and returns
// the allocation it was counted on.
func (rl *Relay) startConnect(k liveKey) (*tcpRelay, error) {
	rl.mu.Lock()
	defer rl.mu.Unlock()
	r := rl.tcp[k]
	switch {
	case r == nil:
		return nil, ErrNotTracked
	case r.pending >= MaxPendingConnects:
		return nil, ErrTooManyConnects
	}
	r.pending++
	return r, nil
}

// endConnect is a Connect counted on r no longer pending: failed, bound or
// closed. A connection outliving its allocation must not free a place of
// the port's next allocation.
func (rl *Relay) endConnect(k liveKey, r *tcpRelay) {
	rl.mu.Lock()
	defer rl.mu.Unlock()
	if rl.tcp[k] == r && r.pending > 0 {
		r.pending--
	}
}

// adopt wraps a peer connection counted on r and records it, so that
// Revoke can close it.
func (rl *Relay) adopt(k liveKey, r *tcpRelay, c net.Conn) *peerConn {
	pc := &peerConn{Conn: c, rl: rl, k: k, r: r, traffic: r.traffic}
	if ta, ok := c.RemoteAddr().(*net.TCPAddr); ok {
		pc.peer = netaddr.AddrPort(ta).Addr()
	}
	rl.mu.Lock()
	defer rl.mu.Unlock()
	if r.conns == nil {
		r.conns = make(map[*peerConn]struct{})
	}
	r.conns[pc] = struct{}{}
	return pc
}

// peerConn is a Connect's or an accepted peer connection; it stops being
// pending when pion starts copying it (after ConnectionBind) or closes it
// (bind timeout, allocation gone).
type peerConn struct {
	net.Conn
	rl   *Relay
	k    liveKey
	r    *tcpRelay
	peer netip.Addr
	once sync.Once
	// traffic counts and paces the bytes (tcpusage.go); nil: not counted.
	traffic *tcpTraffic
}

func (c *peerConn) end() { c.rl.endConnect(c.k, c.r) }

func (c *peerConn) Read(p []byte) (int, error) {
	c.once.Do(c.end)
	if c.traffic == nil {
		return c.Conn.Read(p)
	}
	return c.readCounted(p)
}

func (c *peerConn) Write(p []byte) (int, error) {
	c.once.Do(c.end)
	if c.traffic == nil {
		return c.Conn.Write(p)
	}
	return c.writeCounted(p)
}

func (c *peerConn) Close() error {
	c.once.Do(c.end)
	c.rl.mu.Lock()
	delete(c.r.conns, c)
	c.rl.mu.Unlock()
	return c.Conn.Close()
}

// PendingConnects returns how many Connects of the RFC 6062 allocation of a
// client's 5-tuple are pending; ok is false when the client holds no TCP relay.
func (rl *Relay) PendingConnects(t netaddr.FiveTuple) (n int, ok bool) {
	r := rl.tcpRelayOf(t)
	if r == nil {
		return 0, false
	}
	rl.mu.Lock()
	defer rl.mu.Unlock()
	return r.pending, true
}

// tcpRelayOf finds the RFC 6062 relay of a client's 5-tuple.
func (rl *Relay) tcpRelayOf(t netaddr.FiveTuple) *tcpRelay {
	rl.mu.Lock()
	defer rl.mu.Unlock()
	k, ok := rl.keyOf(t)
	if !ok {
		return nil
	}
	return rl.tcpByClient[k]
}
