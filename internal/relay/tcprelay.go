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
// ConnectionBind: each holds a socket, an unbound one for 30 seconds
// (RFC 6062 §5.2).
const MaxPendingConnects = 8

// tcpRelay is the bookkeeping of one RFC 6062 allocation; under Relay.mu.
type tcpRelay struct {
	route   *bindings.Route        // permissions, channels and the tally (shared with traffic)
	pending int                    // peer connections dialling or waiting for ConnectionBind
	conns   map[*peerConn]struct{} // open peer connections, for Revoke
	traffic *tcpTraffic            // their bytes and rate (tcpusage.go)
}

// listenTCP makes the listener of an RFC 6062 relay of route and returns
// the address to advertise.
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
	return &tcpListener{Listener: ln, rl: rl, key: key}, addrPort(external, ln.Addr().(*net.TCPAddr).Port), nil
}

// claimTCP takes port k for a TCP relay of route if no relay of any kind
// holds it.
func (rl *Relay) claimTCP(k liveKey, route *bindings.Route) bool {
	rl.mu.Lock()
	defer rl.mu.Unlock()
	if rl.live[k] != nil || rl.held[k] != nil || rl.tcp[k] != nil {
		return false
	}
	rl.tcp[k] = &tcpRelay{route: route, traffic: newTCPTraffic(route)}
	return true
}

// releaseTCP gives port k back.
func (rl *Relay) releaseTCP(k liveKey) {
	var peers []*peerConn
	rl.mu.Lock()
	if r := rl.tcp[k]; r != nil {
		r.traffic.end()
		r.route.Usage.Flush(rl.opts.Counters)
		// RFC 6062 §5: the peer data connections go with their allocation
		// (the edge then closes each client data connection piped to one).
		for pc := range r.conns {
			peers = append(peers, pc)
		}
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

// tcpListener is an RFC 6062 relay's listener, whose peers a downlink loop
// accepts (tcpopen.go); it gives its port back to the table on Close.
type tcpListener struct {
	net.Listener
	rl   *Relay
	key  liveKey
	once sync.Once
	// unwatch takes the listener out of the loop that accepts its peers.
	unwatch func()
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
	// turnd's own sockets, and peers a reload denied, whatever the
	// permissions say.
	if rl.forbiddenTCP(peer) {
		return nil, traffic.PeerForbidden
	}
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

// permitsTCP reports whether the RFC 6062 relay of k has a permission for
// peer; false once the relay is gone.
func (rl *Relay) permitsTCP(k liveKey, peer netip.Addr) bool {
	rl.mu.Lock()
	r := rl.tcp[k]
	rl.mu.Unlock()
	return r != nil && r.route.Permitted(peer)
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
// pending when its client's pipe starts copying it (after ConnectionBind)
// or it closes (bind timeout, allocation gone).
type peerConn struct {
	net.Conn
	rl   *Relay
	k    liveKey
	r    *tcpRelay
	peer netip.Addr
	once sync.Once
	// traffic counts and paces the bytes (tcpusage.go); nil: not counted.
	traffic *tcpTraffic
	// lent: a successor holds it too (ExportPeer); under Relay.mu.
	lent bool
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
