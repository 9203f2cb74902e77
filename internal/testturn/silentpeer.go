package testturn

import (
	"net"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// SilentPeer returns a loopback TCP address that drops SYNs: a listener
// whose accept queue (backlog 0) is full with one connection nobody
// accepts. A dial to it hangs until its timeout, as to a firewalled host.
func SilentPeer(t testing.TB) *net.TCPAddr {
	t.Helper()
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatalf("silent peer socket: %v", err)
	}
	t.Cleanup(func() { _ = unix.Close(fd) })
	if err := unix.Bind(fd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatalf("silent peer bind: %v", err)
	}
	if err := unix.Listen(fd, 0); err != nil {
		t.Fatalf("silent peer listen: %v", err)
	}
	sa, err := unix.Getsockname(fd)
	if err != nil {
		t.Fatalf("silent peer address: %v", err)
	}
	addr := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: sa.(*unix.SockaddrInet4).Port}
	// Fill the queue until a dial goes unanswered (the first one or two are queued).
	for i := 0; i < 4; i++ {
		c, err := net.DialTimeout("tcp4", addr.String(), 300*time.Millisecond)
		if err != nil {
			return addr
		}
		t.Cleanup(func() { c.Close() })
	}
	t.Fatal("silent peer still answers SYNs")
	return nil
}
