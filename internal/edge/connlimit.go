package edge

import (
	"net"
	"net/netip"

	"github.com/turnd/turnd/internal/clientip"
)

// Reasons a TCP or TLS connection is refused on accept, as Listen.Refused
// hears them.
const (
	RefuseConnectionsPerIP = "per_ip"     // limits.connections_per_ip
	RefuseConnections      = "total"      // limits.connections
	RefuseFiveTuple        = "five_tuple" // a live connection holds the 5-tuple a PROXY header announced
)

// ConnLimits are the caps on open client TCP and TLS connections; zero
// means none.
type ConnLimits struct {
	PerIP, Total int
}

// admitConn books a newly accepted connection from remote against the caps,
// or returns why it must be closed. Called with s.mu held.
//
// Every idle connection holds a descriptor (shared with the relay sockets),
// a goroutine and a read buffer: one address must not take them all from
// the others, nor all addresses together from the UDP allocations.
func (s *streamConns) admitConn(remote net.Addr) (ip netip.Addr, refused string) {
	if ta, ok := remote.(*net.TCPAddr); ok {
		ip = clientip.Key(ta.AddrPort().Addr()) // an IPv6 host holds a /64
	}
	l := s.limits.Load()
	if l == nil {
		l = &ConnLimits{}
	}
	switch {
	case l.Total > 0 && len(s.conns) >= l.Total:
		return ip, RefuseConnections
	case l.PerIP > 0 && s.perIP[ip] >= l.PerIP:
		return ip, RefuseConnectionsPerIP
	}
	if s.perIP == nil {
		s.perIP = make(map[netip.Addr]int)
	}
	s.perIP[ip]++
	return ip, ""
}

// releaseConn gives back what admitConn booked. Called with s.mu held.
func (s *streamConns) releaseConn(ip netip.Addr) {
	if s.perIP[ip] <= 1 {
		delete(s.perIP, ip)
		return
	}
	s.perIP[ip]--
}
