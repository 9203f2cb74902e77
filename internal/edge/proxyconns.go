package edge

import (
	"net"

	"github.com/turnd/turnd/internal/netaddr"
)

// trackProxied is track for a listener behind PROXY-protocol proxies: a
// connection from a trusted proxy is booked against the total cap only at
// accept, since its client is not known yet; rebook books the client's
// address against the per-IP and per-prefix caps, and claims its 5-tuple,
// once the header has named it. Otherwise every client behind one proxy
// would share the proxy's caps.
func (s *streamConns) trackProxied(ln net.Listener, fromProxy func(net.Addr) bool) *trackedListener {
	return &trackedListener{Listener: ln, set: s, fromProxy: fromProxy}
}

// admitFromProxy books a connection from a trusted proxy against the total
// cap, or returns why it must be closed. Called with s.mu held.
func (s *streamConns) admitFromProxy() (refused string) {
	if l := s.limits.Load(); l != nil && l.Total > 0 && len(s.conns) >= l.Total {
		return RefuseConnections
	}
	return ""
}

// rebook books c, a trusted proxy's connection, as the connection admit
// made of it (as): its 5-tuple, and the per-IP and per-prefix caps of the
// client a PROXY header named (a LOCAL header, a proxy's health check,
// keeps the proxy's own address and counts no client). A direct client on
// the same port was booked in full at accept. It returns why c must be
// closed.
func (s *streamConns) rebook(c *trackedConn, as net.Conn) (refused string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.conns[c]; !ok || c.claimed {
		return "" // closed meanwhile (Close released what it held), or booked at accept
	}
	pc, proxied := as.(*proxiedConn)
	if !proxied {
		return s.claim(c, as.RemoteAddr())
	}
	ip := netaddr.IP(pc.client)
	if refused := s.perClientCap(ip); refused != "" {
		return refused
	}
	if refused := s.claim(c, pc.client); refused != "" {
		return refused
	}
	s.clients.Add(ip)
	c.ip = ip
	return ""
}
