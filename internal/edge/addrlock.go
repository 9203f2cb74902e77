package edge

import (
	"errors"
	"fmt"
	"net"

	"golang.org/x/sys/unix"
)

// addrLock is held for as long as turnd serves one UDP address. SO_REUSEPORT
// lets a second process join a UDP socket group without an error, and the
// kernel would then split clients (and re-hash live flows) between the two
// processes; the lock turns that into a refusal at start.
//
// It is an abstract Unix socket named after the address: binding the name
// fails while any process holds it, and the kernel lets go of it when the
// holder exits, even by kill -9, so no stale lock file can block a restart.
// The name lives in the network namespace, like the address it stands for.
type addrLock struct {
	fd  int
	key string // the address it is named after (lockKey)
}

// lockUDPAddress takes the lock of a UDP address (host:port, port not 0).
func lockUDPAddress(addr string) (*addrLock, error) {
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("lock udp %s: %w", addr, err)
	}
	// A leading '@' names an abstract socket (no file).
	if err := unix.Bind(fd, &unix.SockaddrUnix{Name: "@turnd/udp/" + addr}); err != nil {
		_ = unix.Close(fd)
		if errors.Is(err, unix.EADDRINUSE) {
			return nil, fmt.Errorf("listen udp %s: %w (SO_REUSEPORT would have let both run and split the clients between them)",
				addr, ErrAddressServed)
		}
		return nil, fmt.Errorf("lock udp %s: %w", addr, err)
	}
	return &addrLock{fd: fd, key: addr}, nil
}

// probeUDPAddress refuses an address that overlaps one another process
// serves: the lock is named after the literal address, so a turnd on
// 127.0.0.1:3478 takes another lock than one on 0.0.0.0:3478, and
// SO_REUSEPORT would let it bind and take the loopback clients. A socket
// bound like the group's but without SO_REUSEPORT fails on any overlap,
// wildcard or specific, either way round; it runs before this process's
// own sockets bind, so it finds only others'.
func probeUDPAddress(addr string) error {
	pc, err := net.ListenPacket("udp", addr)
	if err != nil {
		// Any process's socket, not only a turnd's: net's error says
		// "address already in use", which is what the operator must read.
		return fmt.Errorf("probe udp %s for an overlapping address: %w", addr, err)
	}
	return pc.Close()
}

// Close lets go of the lock.
func (l *addrLock) Close() error { return unix.Close(l.fd) }

// lockKey is the form of a bound or configured address the lock is named
// by, so that "127.0.0.1:3478" and the socket's own "127.0.0.1:3478" agree
// whichever way they were written.
func lockKey(addr string) (string, bool) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil || port == "0" {
		return "", false
	}
	if ip := net.ParseIP(host); ip != nil {
		host = ip.String()
	}
	return net.JoinHostPort(host, port), true
}
