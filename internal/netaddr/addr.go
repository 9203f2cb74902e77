package netaddr

import (
	"net"
	"net/netip"
)

// AddrPort is a UDP or TCP address as an unmapped netip.AddrPort, so that
// a client seen as ::ffff:192.0.2.1 on a dual-stack socket and as
// 192.0.2.1 elsewhere is one client; the zero AddrPort for nil or any
// other kind of address.
func AddrPort(a net.Addr) netip.AddrPort {
	var ap netip.AddrPort
	switch v := a.(type) {
	case *net.UDPAddr:
		ap = v.AddrPort()
	case *net.TCPAddr:
		ap = v.AddrPort()
	default:
		return ap
	}
	return Unmap(ap)
}

// IP is the unmapped IP address of a UDP or TCP address; the zero Addr for
// nil or any other kind of address.
func IP(a net.Addr) netip.Addr { return AddrPort(a).Addr() }

// Unmap is ap with an IPv4-mapped IPv6 address turned into IPv4.
func Unmap(ap netip.AddrPort) netip.AddrPort { return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port()) }
