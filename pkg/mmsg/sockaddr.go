package mmsg

import (
	"net/netip"
	"unsafe"

	"golang.org/x/sys/unix"
)

// sockaddr is room for an IPv4 or IPv6 socket address.
type sockaddr = unix.RawSockaddrInet6

// addrPort decodes a socket address written by the kernel.
func addrPort(sa *sockaddr) netip.AddrPort {
	switch sa.Family {
	case unix.AF_INET:
		sa4 := (*unix.RawSockaddrInet4)(unsafe.Pointer(sa))
		p := (*[2]byte)(unsafe.Pointer(&sa4.Port))
		return netip.AddrPortFrom(netip.AddrFrom4(sa4.Addr), uint16(p[0])<<8|uint16(p[1]))
	case unix.AF_INET6:
		p := (*[2]byte)(unsafe.Pointer(&sa.Port))
		return netip.AddrPortFrom(netip.AddrFrom16(sa.Addr), uint16(p[0])<<8|uint16(p[1]))
	}
	return netip.AddrPort{}
}
