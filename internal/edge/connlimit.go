package edge

import (
	"net"
	"net/netip"

	"github.com/turnd/turnd/internal/netaddr"
)

// Reasons a TCP or TLS connection is refused on accept, as Listen.Refused
// hears them.
const (
	RefuseConnectionsPerIP     = "per_ip"     // limits.connections_per_ip
	RefuseConnectionsPerPrefix = "per_prefix" // limits.connections_per_prefix
	RefuseConnections          = "total"      // limits.connections
	RefuseFiveTuple            = "five_tuple" // a live connection holds the 5-tuple a PROXY header announced
)

// ConnLimits are the caps on open client TCP and TLS connections; zero
// means none. PerIP counts per IPv4 address or IPv6 /64, PerPrefix per
// IPv4 /24 or IPv6 /48 (clientip.Counts).
type ConnLimits struct {
	PerIP, PerPrefix, Total int
}

// admitConn books a newly accepted connection from remote against the caps,
// or returns why it must be closed. Called with s.mu held.
//
// Every idle connection holds a descriptor (shared with the relay sockets),
// a goroutine and a read buffer: one address, or one network's many
// addresses, must not take them all from the others, nor all addresses
// together from the UDP allocations.
func (s *streamConns) admitConn(remote net.Addr) (ip netip.Addr, refused string) {
	if ta, ok := remote.(*net.TCPAddr); ok {
		ip = netaddr.IP(ta)
	}
	if l := s.limits.Load(); l != nil && l.Total > 0 && len(s.conns) >= l.Total {
		return ip, RefuseConnections
	}
	if refused := s.perClientCap(ip); refused != "" {
		return ip, refused
	}
	if ip.IsValid() {
		s.clients.Add(ip)
	}
	return ip, ""
}

// perClientCap returns the cap one more connection from ip would pass, or
// "". Called with s.mu held.
func (s *streamConns) perClientCap(ip netip.Addr) (refused string) {
	l := s.limits.Load()
	switch {
	case l == nil:
		return ""
	case l.PerIP > 0 && s.clients.Host(ip) >= l.PerIP:
		return RefuseConnectionsPerIP
	case l.PerPrefix > 0 && s.clients.Network(ip) >= l.PerPrefix:
		return RefuseConnectionsPerPrefix
	}
	return ""
}

// releaseConn gives back what admitConn or rebook booked for ip, the zero
// Addr for none (a proxy's connection that named no client). Called with
// s.mu held.
func (s *streamConns) releaseConn(ip netip.Addr) {
	if ip.IsValid() {
		s.clients.Remove(ip)
	}
}
