package mmsg

import (
	"fmt"
	"net"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// File returns a duplicate of the socket's descriptor as a file, for
// another process to serve the same socket (SCM_RIGHTS): the socket stays
// open here until Close, and in the other process until it closes its copy.
func (s *Socket) File() (*os.File, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil, net.ErrClosed
	}
	fd, err := unix.FcntlInt(uintptr(s.fd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("dup udp socket %s: %w", s.local, err)
	}
	return os.NewFile(uintptr(fd), "udp:"+s.local.String()), nil
}

// FromFile makes a Socket of a duplicate of f's descriptor, which must be a
// bound UDP socket (one another process passed); f stays the caller's to
// close. The socket is made non-blocking: the other process may have
// received it in either mode.
func FromFile(f *os.File) (*Socket, error) {
	// Not f.Fd: it would make the open file, which the other process
	// shares, blocking.
	rc, err := f.SyscallConn()
	if err != nil {
		return nil, fmt.Errorf("adopt udp socket %s: %w", f.Name(), err)
	}
	fd := -1
	var derr error
	if err := rc.Control(func(s uintptr) { fd, derr = unix.FcntlInt(s, unix.F_DUPFD_CLOEXEC, 0) }); err != nil {
		return nil, fmt.Errorf("adopt udp socket %s: %w", f.Name(), err)
	}
	if derr != nil {
		return nil, fmt.Errorf("adopt udp socket %s: %w", f.Name(), derr)
	}
	s, err := fromFd(fd)
	if err != nil {
		_ = unix.Close(fd)
		return nil, fmt.Errorf("adopt udp socket %s: %w", f.Name(), err)
	}
	return s, nil
}

func fromFd(fd int) (*Socket, error) {
	typ, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TYPE)
	if err != nil {
		return nil, err
	}
	if typ != unix.SOCK_DGRAM {
		return nil, ErrNotUDP
	}
	sa, err := unix.Getsockname(fd)
	if err != nil {
		return nil, err
	}
	var local *net.UDPAddr
	switch sa := sa.(type) {
	case *unix.SockaddrInet4:
		local = &net.UDPAddr{IP: append(net.IP(nil), sa.Addr[:]...), Port: sa.Port}
	case *unix.SockaddrInet6:
		local = &net.UDPAddr{IP: append(net.IP(nil), sa.Addr[:]...), Port: sa.Port}
		if sa.ZoneId != 0 {
			if ifi, err := net.InterfaceByIndex(int(sa.ZoneId)); err == nil {
				local.Zone = ifi.Name
			}
		}
	default:
		return nil, ErrNotUDP
	}
	if local.Port == 0 {
		return nil, ErrNotUDP // never bound
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		return nil, err
	}
	s := &Socket{fd: fd, local: local, v6: local.IP.To4() == nil}
	s.readStep = s.step
	return s, nil
}

// Dup duplicates the descriptor of c (a socket the Go poller or this
// package holds) as a file to pass to another process, leaving the open
// file both share as it is: net's File and os.File.Fd would make it
// blocking, in this process too.
func Dup(c syscall.Conn, name string) (*os.File, error) {
	rc, err := c.SyscallConn()
	if err != nil {
		return nil, fmt.Errorf("dup %s: %w", name, err)
	}
	fd := -1
	var derr error
	if err := rc.Control(func(s uintptr) { fd, derr = unix.FcntlInt(s, unix.F_DUPFD_CLOEXEC, 0) }); err != nil {
		return nil, fmt.Errorf("dup %s: %w", name, err)
	}
	if derr != nil {
		return nil, fmt.Errorf("dup %s: %w", name, derr)
	}
	return os.NewFile(uintptr(fd), name), nil
}
