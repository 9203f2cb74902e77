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

// putSockaddr encodes a for a socket of the given family (an IPv4 address
// on an IPv6 socket becomes IPv4-mapped) and returns its length.
func putSockaddr(sa *sockaddr, a netip.AddrPort, v6socket bool) uint32 {
	if !v6socket {
		sa4 := (*unix.RawSockaddrInet4)(unsafe.Pointer(sa))
		sa4.Family = unix.AF_INET
		p := (*[2]byte)(unsafe.Pointer(&sa4.Port))
		p[0], p[1] = byte(a.Port()>>8), byte(a.Port())
		sa4.Addr = a.Addr().Unmap().As4()
		return unix.SizeofSockaddrInet4
	}
	sa.Family = unix.AF_INET6
	p := (*[2]byte)(unsafe.Pointer(&sa.Port))
	p[0], p[1] = byte(a.Port()>>8), byte(a.Port())
	sa.Flowinfo = 0
	sa.Addr = a.Addr().As16()
	sa.Scope_id = 0
	return unix.SizeofSockaddrInet6
}

// SendTo sends one datagram on the non-blocking socket fd without waiting:
// a full socket buffer loses the datagram (EAGAIN), as UDP may. v6socket
// says the socket's family.
//
// It is a raw system call on purpose, like every call in this package: they
// never block, and entering the scheduler's syscall state for each one
// keeps the runtime's sysmon thread waking at its shortest period on a busy
// relay and handing Ps between threads (figures: docs/benchmarks.md).
//
// Hot path: no allocation.
func SendTo(fd int, b []byte, to netip.AddrPort, v6socket bool) error {
	var sa sockaddr
	salen := putSockaddr(&sa, to, v6socket)
	var p unsafe.Pointer
	if len(b) > 0 {
		p = unsafe.Pointer(&b[0])
	}
	_, _, errno := unix.RawSyscall6(unix.SYS_SENDTO, uintptr(fd), uintptr(p), uintptr(len(b)),
		unix.MSG_DONTWAIT, uintptr(unsafe.Pointer(&sa)), uintptr(salen))
	if errno != 0 {
		return errno
	}
	return nil
}
