package relay

import (
	"fmt"
	"net"

	"golang.org/x/sys/unix"

	"github.com/turnd/turnd/internal/mmsg"
)

// setDontFragment makes the kernel send every datagram of conn with the IP
// DF bit set (IPv4) or never fragment it locally (IPv6), as RFC 8656 §7.2
// asks when a client sends DONT-FRAGMENT: an oversized datagram then fails
// instead of being fragmented.
func setDontFragment(conn mmsg.UDPConn) error {
	raw, err := conn.SyscallConn()
	if err != nil {
		return fmt.Errorf("access relay socket: %w", err)
	}
	ipv6 := false
	if la, ok := conn.LocalAddr().(*net.UDPAddr); ok && la.IP.To4() == nil {
		ipv6 = true
	}
	var serr error
	err = raw.Control(func(fd uintptr) {
		if ipv6 {
			serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_IPV6, unix.IPV6_MTU_DISCOVER, unix.IPV6_PMTUDISC_DO)
			return
		}
		serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_IP, unix.IP_MTU_DISCOVER, unix.IP_PMTUDISC_DO)
	})
	if err == nil {
		err = serr
	}
	if err != nil {
		return fmt.Errorf("set don't-fragment: %w", err)
	}
	return nil
}

// dontFragmentSet reports whether conn sends with DF (used by tests).
func dontFragmentSet(conn mmsg.UDPConn) (bool, error) {
	raw, err := conn.SyscallConn()
	if err != nil {
		return false, err
	}
	var v int
	var serr error
	err = raw.Control(func(fd uintptr) {
		if la, ok := conn.LocalAddr().(*net.UDPAddr); ok && la.IP.To4() == nil {
			v, serr = unix.GetsockoptInt(int(fd), unix.IPPROTO_IPV6, unix.IPV6_MTU_DISCOVER)
			return
		}
		v, serr = unix.GetsockoptInt(int(fd), unix.IPPROTO_IP, unix.IP_MTU_DISCOVER)
	})
	if err == nil {
		err = serr
	}
	return v == unix.IP_PMTUDISC_DO, err
}
