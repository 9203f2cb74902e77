package e2e

import (
	"net/netip"
	"os"
	"strconv"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestDeadListenerFailsTheProcess: a TURN listener that stops accepting
// under turnd ends the process with exit code 1, naming the component,
// rather than leaving turnd running deaf on that address.
func TestDeadListenerFailsTheProcess(t *testing.T) {
	p := start(t, testConfig())
	if p.TCP == "" {
		t.Fatal("the test config has no TCP listener")
	}
	shutdownListener(t, p.cmd.Process.Pid, netip.MustParseAddrPort(p.TCP))
	if code := p.waitExit(10 * time.Second); code != 1 {
		t.Fatalf("exit code %d after its TCP listener died, want 1; log:\n%s", code, p.logText())
	}
	line := p.waitLog("stopped", time.Second)
	if line["component"] != "turn" || line["level"] != "ERROR" {
		t.Errorf("last words %v, want an ERROR naming component turn", line)
	}
}

// shutdownListener finds turnd's listening TCP socket on addr (copying its
// descriptors with pidfd_getfd, which a parent may do) and shuts it down
// for reading: the kernel then fails its pending and future accepts.
func shutdownListener(t *testing.T, pid int, addr netip.AddrPort) {
	t.Helper()
	pidfd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		t.Fatalf("pidfd_open %d: %v", pid, err)
	}
	defer unix.Close(pidfd)
	entries, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/fd")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		target, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		fd, err := unix.PidfdGetfd(pidfd, target, 0)
		if err != nil {
			continue // closed meanwhile
		}
		if isListenerOn(fd, addr) {
			err := unix.Shutdown(fd, unix.SHUT_RD)
			unix.Close(fd)
			if err != nil {
				t.Fatalf("shutdown turnd's listener on %s: %v", addr, err)
			}
			return
		}
		unix.Close(fd)
	}
	t.Fatalf("turnd has no listening TCP socket on %s", addr)
}

func isListenerOn(fd int, addr netip.AddrPort) bool {
	if n, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_ACCEPTCONN); err != nil || n != 1 {
		return false
	}
	sa, err := unix.Getsockname(fd)
	if err != nil {
		return false
	}
	in4, ok := sa.(*unix.SockaddrInet4)
	return ok && netip.AddrPortFrom(netip.AddrFrom4(in4.Addr), uint16(in4.Port)) == addr
}
