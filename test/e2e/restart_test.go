package e2e

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/turnd/turnd/internal/testturn"
)

// TestKill9RestartOnSamePorts: turnd killed with SIGKILL while it holds UDP
// and TCP allocations and an HTTP connection comes straight back on the
// same fixed ports (no "address in use" from connections the dead process
// left in TIME_WAIT), and serves new clients and old ones that allocate again.
func TestKill9RestartOnSamePorts(t *testing.T) {
	port, httpPort := testturn.FreePort(t), testturn.FreeTCPPort(t)
	cfg := testConfig()
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	cfg.Listen.UDP, cfg.Listen.TCP = []string{addr}, []string{addr}
	cfg.HTTP.Address = net.JoinHostPort("127.0.0.1", strconv.Itoa(httpPort))
	path := writeConfig(t, cfg)
	peer := echoPeer(t)

	old := startTurndFile(t, path)
	udp := testturn.Dial(t, "udp", old.UDP, "demo", "demo")
	relayed(t, udp, peer)
	tcp := testturn.Dial(t, "tcp", old.TCP, "demo", "demo")
	relayed(t, tcp, peer)
	holdHTTPConnection(t, old.HTTP) // turnd closes it when it dies: a socket left closing

	old.signal(syscall.SIGKILL)
	if sig := old.killedBy(5 * time.Second); sig != syscall.SIGKILL {
		t.Fatalf("turnd ended by %v, want SIGKILL", sig)
	}

	// What makes a naive restart fail: the dead process's connections
	// linger in FIN-WAIT/TIME-WAIT on the listening ports.
	if !eventuallyClosing(t, port, httpPort) {
		t.Error("no connection of the killed turnd left closing on its ports: the test does not test what it says")
	}

	began := time.Now()
	restarted := startTurndFile(t, path)
	took := time.Since(began)
	if took > 2*time.Second {
		t.Errorf("restart took %v", took)
	}
	t.Logf("serving again %v after the restart began", took.Round(time.Millisecond))
	if restarted.UDP != addr || restarted.TCP != addr || restarted.HTTP != cfg.HTTP.Address {
		t.Fatalf("restarted on udp %s tcp %s http %s, want %s and %s",
			restarted.UDP, restarted.TCP, restarted.HTTP, addr, cfg.HTTP.Address)
	}
	relayed(t, testturn.Dial(t, "udp", restarted.UDP, "demo", "demo"), peer)
	relayed(t, testturn.Dial(t, "tcp", restarted.TCP, "demo", "demo"), peer)
	// The old UDP client's 5-tuple is unknown to the new process: its stale
	// nonce gets 438, and it allocates again from the same socket.
	relayed(t, udp, peer)
	if got := sumPrefix(restarted.scrape(), "turnd_allocations{"); got != 3 {
		t.Errorf("allocations after restart = %v, want 3", got)
	}
}

// holdHTTPConnection makes one keep-alive request on a connection of its
// own and keeps that connection open, unread, until the test ends: the
// shared HTTP client's pool may close or reuse a kept-alive connection, and
// a connection turnd has fully read is closed with a FIN (not a reset) when
// turnd dies, so its side lingers in FIN-WAIT on turnd's port.
func holdHTTPConnection(t *testing.T, addr string) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatalf("dial http: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	if _, err := c.Write([]byte("GET /healthz HTTP/1.1\r\nHost: turnd\r\n\r\n")); err != nil {
		t.Fatalf("write http request: %v", err)
	}
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("read http response: %v", err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
}

// relayed allocates, permits peer and checks an echo comes back through the relay.
func relayed(t *testing.T, c *testturn.Client, peer *net.UDPAddr) {
	t.Helper()
	c.MustAllocate()
	if code := c.Permit(peer); code != 0 {
		t.Fatalf("CreatePermission: error %d", code)
	}
	if !c.Echo(peer, "relayed") {
		t.Fatal("no echo through the relay")
	}
}

// eventuallyClosing reports whether a connection on ports shows up in a
// closing state within two seconds: the kernel may finish closing a dead
// process's sockets a little after its parent has reaped it.
func eventuallyClosing(t *testing.T, ports ...int) bool {
	t.Helper()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(2 * time.Second)
	for closingConns(t, ports...) == 0 {
		select {
		case <-tick.C:
		case <-deadline:
			return false
		}
	}
	return true
}

// closingConns counts TCP sockets on loopback whose local port is one of
// ports and whose state is one a closed socket passes through (FIN-WAIT-1/2,
// TIME-WAIT, CLOSING, LAST-ACK), from /proc/net/tcp.
func closingConns(t *testing.T, ports ...int) int {
	t.Helper()
	b, err := readProcNet("tcp")
	if err != nil {
		t.Fatal(err)
	}
	closing := map[string]bool{"04": true, "05": true, "06": true, "09": true, "0B": true}
	want := make(map[string]bool)
	for _, p := range ports {
		want[strings.ToUpper(strconv.FormatInt(int64(p), 16))] = true
	}
	n := 0
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 4 {
			continue
		}
		_, localPort, _ := strings.Cut(fields[1], ":")
		if want[strings.TrimLeft(localPort, "0")] && closing[fields[3]] {
			n++
		}
	}
	return n
}

// readProcNet reads /proc/net/NAME as this process's own network namespace
// sees it. /proc/net follows the main thread, which the browser tests may
// have left in a namespace of their own (a locked thread that ends in a
// namespace cannot be discarded when it is the main thread), so it reads
// through a thread locked for the read, which is in the host's namespace.
func readProcNet(name string) ([]byte, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	return os.ReadFile("/proc/thread-self/net/" + name)
}
