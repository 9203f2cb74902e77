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

	// locks keep a second turnd out of each UDP address's socket group.
	locks []*addrLock
	// streams are the connections the TCP and TLS listeners accepted.
	streams streamConns
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
		if key, fixed := lockKey(addr); fixed {
			lk, err := lockUDPAddress(key)
			if err != nil {
				return err
			}
			s.locks = append(s.locks, lk)
			if err := probeUDPAddress(key); err != nil {
				return err
			}
		}
	}
	for _, addr := range l.UDP {
		_, fixed := lockKey(addr)
		group, err := listenUDPGroup(addr, n, l.Buffer)
		if err != nil {
			return err
		}
		s.UDP = append(s.UDP, group...)
		if !fixed {
			lk, err := lockUDPAddress(group[0].LocalAddr().String())
			if err != nil {
				return err
			}
			s.locks = append(s.locks, lk)
		}
	}
	if len(l.TLS)+len(l.TCPTLS) > 0 && l.TLSConfig == nil {
		return errors.New("listen tls: no tls configuration")
	}
	// proxied is the PROXY-protocol policy of a listen address, nil for none.
	proxied := func(addr string) *proxyPolicy {
		if l.Proxy != nil && slices.Contains(l.Proxy.Listeners, addr) {
			return &proxyPolicy{trusted: l.Proxy.Trusted, refused: l.Proxy.Refused}
		}
		return nil
	}
	for _, addr := range l.TCP {
		var ln net.Listener
		var err error
		if pp := proxied(addr); pp != nil {
			ln, _, err = listenSorting(addr, true, nil, pp, &s.streams)
		} else {
			ln, err = listenTCP(addr, nil, &s.streams)
		}
		if err != nil {
			return err
		}
		s.TCP = append(s.TCP, ln)
	}
	for _, addr := range l.TLS {
		var ln net.Listener
		var err error
		if pp := proxied(addr); pp != nil {
			_, ln, err = listenSorting(addr, false, l.TLSConfig, pp, &s.streams)
		} else {
			ln, err = listenTCP(addr, l.TLSConfig, &s.streams)
		}
		if err != nil {
			return err
		}
		s.TLS = append(s.TLS, ln)
	}
	for _, addr := range l.TCPTLS {
		plain, secure, err := listenSorting(addr, true, l.TLSConfig, proxied(addr), &s.streams)
		if err != nil {
			return err
		}
		s.TCP = append(s.TCP, plain)
		s.TLS = append(s.TLS, secure)
	}
	return nil
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
