package edge

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"runtime"
	"slices"
	"time"

	"github.com/turnd/turnd/internal/mmsg"
)

// HandshakeTimeout bounds a TLS handshake, and the wait for a stream's first
// byte or PROXY header: a client that connects and stays silent is cut
// instead of holding a goroutine and a socket.
const HandshakeTimeout = 10 * time.Second

// Listen says which client-facing sockets Bind opens.
type Listen struct {
	// UDP addresses each get a SO_REUSEPORT group of Sockets sockets
	// (0: GOMAXPROCS), asking for Buffer bytes of socket buffer (0: the
	// kernel's default).
	UDP             []string
	Sockets, Buffer int
	// TCP addresses serve plain TCP, TLS ones TLS, TCPTLS ones both on one
	// port (told apart by the first byte). TLS and TCPTLS need TLSConfig.
	TCP, TLS, TCPTLS []string
	TLSConfig        *tls.Config
	// Proxy, if not nil, reads PROXY protocol headers on its listeners.
	Proxy *Proxy
	// Limits caps the accepted TCP and TLS connections (SetConnLimits
	// replaces them).
	Limits ConnLimits
	// Refused, if not nil, hears why a connection was closed on accept
	// (RefuseConnections, RefuseConnectionsPerIP).
	Refused func(reason string)
}

// Proxy is the PROXY protocol (v1 and v2) set-up of some stream listeners.
type Proxy struct {
	// Listeners are the TCP, TLS or TCPTLS addresses, as written in Listen,
	// whose connections may come through a proxy.
	Listeners []string
	// Trusted are the proxies' addresses: only their headers are believed,
	// and only their connections must carry one.
	Trusted []netip.Prefix
	// Refused, if not nil, hears of each connection closed at the PROXY
	// step (ProxyUntrusted, ProxyMissing, ProxyMalformed, ProxyTimeout).
	Refused func(reason string, from net.Addr)
}

// Sockets are the client-facing sockets Bind opened, served by the edge's
// ServeUDP and ServeStreams and closed by Close.
type Sockets struct {
	// UDP holds every group's sockets, group after group.
	UDP []*mmsg.Socket
	// TCP and TLS are the plain and TLS listeners; a shared port has one
	// of each.
	TCP, TLS []net.Listener

	// udpAddrs is, for each socket of UDP, its group's address as Listen
	// wrote it (Export describes the socket by it).
	udpAddrs []string
	// locks keep a second turnd out of each UDP address's socket group.
	locks []*addrLock
	// listeners describe every listening socket behind TCP and TLS.
	listeners []*listenerInfo
	// passed are Adopt's listeners by their index in the Export: where
	// AdoptStreams' connections were accepted.
	passed map[int]net.Listener
	// streams are the connections the TCP and TLS listeners accepted.
	streams streamConns
}

// Listener kinds, as Listen names them and Export describes them.
const (
	KindTCP    = "tcp"
	KindTLS    = "tls"
	KindTCPTLS = "tcptls"
)

// listenerInfo is one listening socket: its address as Listen wrote it,
// its kind, and what ServeStreams serves of it (one listener, or a shared
// port's two sides).
type listenerInfo struct {
	addr   string
	kind   string
	proxy  bool
	raw    *net.TCPListener
	port   *sortingPort // a shared port's or a PROXY port's; nil: none
	public []net.Listener
}

// close closes this process's descriptor of the socket.
func (li *listenerInfo) close() error {
	if li.port != nil {
		return li.port.close()
	}
	return li.public[0].Close()
}

// Bind opens every socket l names. On error it closes what it opened.
func Bind(l Listen) (*Sockets, error) {
	s := &Sockets{}
	s.streams.refused = l.Refused
	s.SetConnLimits(l.Limits)
	if err := s.bind(l); err != nil {
		_ = s.Close()
		return nil, err
	}
	return s, nil
}

// bind opens the client-facing sockets.
func (s *Sockets) bind(l Listen) error {
	n := l.Sockets
	if n == 0 {
		n = runtime.GOMAXPROCS(0)
	}
	// Before the first socket binds: a second turnd must not join the
	// group even for a moment, as that re-hashes the first one's flows, and
	// the overlap probe must find none of this process's own sockets.
	// A port 0 address is new by construction and locked once bound, so a
	// third process told the chosen port is refused too.
	for _, addr := range l.UDP {
		if err := s.lockFixed(addr); err != nil {
			return err
		}
	}
	for _, addr := range l.UDP {
		if err := s.bindGroup(addr, n, l.Buffer); err != nil {
			return err
		}
	}
	if len(l.TLS)+len(l.TCPTLS) > 0 && l.TLSConfig == nil {
		return errors.New("listen tls: no tls configuration")
	}
	for _, k := range l.streamAddrs() {
		raw, err := net.Listen("tcp", k.addr)
		if err != nil {
			return fmt.Errorf("listen tcp %s: %w", k.addr, err)
		}
		s.serveListener(l, k.kind, k.addr, raw.(*net.TCPListener))
	}
	return nil
}

// bindGroup binds one UDP address's group and, for a port 0 address (new
// by construction), takes its lock once the port is chosen; a fixed
// address's lock is taken before any socket binds (bind).
func (s *Sockets) bindGroup(addr string, n, buffer int) error {
	_, fixed := lockKey(addr)
	group, err := listenUDPGroup(addr, n, buffer)
	if err != nil {
		return err
	}
	s.UDP = append(s.UDP, group...)
	for range group {
		s.udpAddrs = append(s.udpAddrs, addr)
	}
	if !fixed {
		key, _ := lockKey(group[0].LocalAddr().String())
		lk, err := lockUDPAddress(key)
		if err != nil {
			return err
		}
		s.locks = append(s.locks, lk)
	}
	return nil
}

// kindAddr is one stream listen address and its kind.
type kindAddr struct{ kind, addr string }

// streamAddrs lists l's stream addresses in Bind's order.
func (l Listen) streamAddrs() []kindAddr {
	var out []kindAddr
	for _, a := range l.TCP {
		out = append(out, kindAddr{KindTCP, a})
	}
	for _, a := range l.TLS {
		out = append(out, kindAddr{KindTLS, a})
	}
	for _, a := range l.TCPTLS {
		out = append(out, kindAddr{KindTCPTLS, a})
	}
	return out
}

// proxied is the PROXY-protocol policy of a listen address, nil for none.
func (l Listen) proxied(addr string) *proxyPolicy {
	if l.Proxy != nil && slices.Contains(l.Proxy.Listeners, addr) {
		return &proxyPolicy{trusted: l.Proxy.Trusted, refused: l.Proxy.Refused}
	}
	return nil
}

// serveListener wraps a bound listening socket as its kind says (TLS, a
// shared port's sorting, PROXY headers, tracking) and adds it to s.
func (s *Sockets) serveListener(l Listen, kind, addr string, raw *net.TCPListener) {
	pp := l.proxied(addr)
	li := &listenerInfo{addr: addr, kind: kind, proxy: pp != nil, raw: raw}
	switch {
	case kind == KindTCPTLS:
		plain, secure := wrapSorting(raw, true, l.TLSConfig, pp, &s.streams)
		li.public = []net.Listener{plain, secure}
		s.TCP = append(s.TCP, plain)
		s.TLS = append(s.TLS, secure)
	case pp != nil && kind == KindTCP:
		plain, _ := wrapSorting(raw, true, nil, pp, &s.streams)
		li.public = []net.Listener{plain}
		s.TCP = append(s.TCP, plain)
	case pp != nil:
		_, secure := wrapSorting(raw, false, l.TLSConfig, pp, &s.streams)
		li.public = []net.Listener{secure}
		s.TLS = append(s.TLS, secure)
	case kind == KindTCP:
		li.public = []net.Listener{wrapTCP(raw, nil, &s.streams)}
		s.TCP = append(s.TCP, li.public[0])
	default:
		li.public = []net.Listener{wrapTCP(raw, l.TLSConfig, &s.streams)}
		s.TLS = append(s.TLS, li.public[0])
	}
	if sl, ok := li.public[0].(*sortedListener); ok {
		li.port = sl.port
	}
	s.listeners = append(s.listeners, li)
}

// lockFixed takes the lock of a UDP address with a fixed port and probes
// it for an overlapping one another process serves, before any socket of
// its group binds.
func (s *Sockets) lockFixed(addr string) error {
	key, fixed := lockKey(addr)
	if !fixed {
		return nil
	}
	lk, err := lockUDPAddress(key)
	if err != nil {
		return err
	}
	s.locks = append(s.locks, lk)
	return probeUDPAddress(key)
}

// SetConnLimits replaces the connection caps; connections already open stay.
func (s *Sockets) SetConnLimits(l ConnLimits) {
	s.streams.limits.Store(&l)
}

// UDPAddrs returns the bound UDP addresses, one per SO_REUSEPORT group.
func (s *Sockets) UDPAddrs() []net.Addr {
	var out []net.Addr
	seen := map[string]bool{}
	for _, c := range s.UDP {
		if a := c.LocalAddr(); !seen[a.String()] {
			seen[a.String()] = true
			out = append(out, a)
		}
	}
	return out
}

// TCPAddrs returns the bound TCP listener addresses.
func (s *Sockets) TCPAddrs() []net.Addr { return listenerAddrs(s.TCP) }

// TLSAddrs returns the bound TLS listener addresses.
func (s *Sockets) TLSAddrs() []net.Addr { return listenerAddrs(s.TLS) }

func listenerAddrs(ls []net.Listener) []net.Addr {
	out := make([]net.Addr, 0, len(ls))
	for _, ln := range ls {
		out = append(out, ln.Addr())
	}
	return out
}

// Close closes every socket still open, every accepted connection, and
// last the address locks: the addresses are free for the next turnd once
// the sockets are. Sockets already closed are skipped.
func (s *Sockets) Close() error {
	err := errors.Join(closeAll(s.UDP), closeAll(s.TCP), closeAll(s.TLS))
	// Closing a listener does not close what it accepted.
	s.streams.closeTracked()
	if lerr := closeAll(s.locks); lerr != nil {
		err = errors.Join(err, fmt.Errorf("unlock udp addresses: %w", lerr))
	}
	return err
}
