package e2e

import (
	"errors"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestUclientDualAllocation runs coturn's turnutils_uclient -Z (a dual
// allocation: ADDITIONAL-ADDRESS-FAMILY IPv6, coturn's type 0x8032) against
// turnd relaying in both families, to an IPv4 peer and to an IPv6 one (and
// to the IPv6 one with uclient on TCP): each run must relay every message both ways (RFC 8656 §7.2, and
// docs/control-plane.md section 3). uclient never releases the second
// allocation of each pair and sends its Refreshes with REQUESTED-ADDRESS-FAMILY
// 1, 2 or none at random, so its totals are asserted, and turnd's log line of
// each allocation it created, not its releases.
func TestUclientDualAllocation(t *testing.T) {
	cfg := testConfig()
	cfg.Relay.Address = "127.0.0.1,::1"
	srv := start(t, cfg)

	const m, n = 4, 50
	created := 0
	for _, tc := range []struct {
		name, server, peer string
		args               []string
	}{
		{"udp to 127.0.0.1", srv.UDP, "127.0.0.1", nil},
		{"udp to ::1", srv.UDP, "::1", nil},
		{"tcp control to ::1", srv.TCP, "::1", []string{"-t"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			peer := strconv.Itoa(startPeerAt(t, tc.peer))
			args := append([]string{"-Z", "-u", "demo", "-w", "demo", "-e", tc.peer, "-r", peer,
				"-m", strconv.Itoa(m), "-n", strconv.Itoa(n), "-l", "120"}, tc.args...)
			requireZeroLoss(t, uclient(t, uclientTimeout, tc.server, args...), m*n)
			// uclient makes two allocations per client, each a dual one.
			created += 2 * m
			srv.waitLogCount("allocation created", created, 5*time.Second)
			requireDualRelays(t, srv)
		})
	}
}

// requireDualRelays checks that every allocation turnd logged as created
// got an IPv4 and an IPv6 relayed address (its "relay" field lists both).
func requireDualRelays(t *testing.T, srv *turnd) {
	t.Helper()
	srv.mu.Lock()
	defer srv.mu.Unlock()
	for _, l := range srv.lines {
		if l["msg"] != "allocation created" {
			continue
		}
		relay, _ := l["relay"].(string)
		var v4, v6 int
		for _, a := range strings.Split(relay, ",") {
			ap, err := netip.ParseAddrPort(a)
			switch {
			case err != nil:
				t.Errorf("allocation created with relay %q: %v", relay, err)
			case ap.Addr().Is4():
				v4++
			default:
				v6++
			}
		}
		if v4 != 1 || v6 != 1 {
			t.Errorf("allocation created with relay %q, want an IPv4 and an IPv6 address", relay)
		}
	}
}

// startPeerAt is startPeer on host, an IPv4 or IPv6 loopback address.
func startPeerAt(t *testing.T, host string) int {
	t.Helper()
	network := "udp4"
	if ip := net.ParseIP(host); ip.To4() == nil {
		network = "udp6"
	}
	for attempt := 0; attempt < 5; attempt++ {
		port := freePortOn(t, network, host)
		cmd := exec.Command("turnutils_peer", "-L", host, "-p", strconv.Itoa(port))
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		if echoesAt(host, port) {
			return port
		}
		_ = cmd.Process.Kill()
	}
	t.Fatalf("turnutils_peer did not start on %s", host)
	return 0
}

// freePortOn is freeUDPPort on host.
func freePortOn(t *testing.T, network, host string) int {
	t.Helper()
	c, err := net.ListenUDP(network, &net.UDPAddr{IP: net.ParseIP(host)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	return c.LocalAddr().(*net.UDPAddr).Port
}

// echoesAt is echoes for a peer on host: a bounded poll (50 tries, 100 ms
// each), as turnutils_peer says nothing when it is ready.
func echoesAt(host string, port int) bool {
	c, err := net.Dial("udp", net.JoinHostPort(host, strconv.Itoa(port)))
	if err != nil {
		return false
	}
	defer c.Close()
	buf := make([]byte, 16)
	for i := 0; i < 50; i++ {
		_, _ = c.Write([]byte("ping"))
		_ = c.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
		n, err := c.Read(buf)
		if err == nil && string(buf[:n]) == "ping" {
			return true
		}
		if err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
			time.Sleep(100 * time.Millisecond) // refused: not bound yet
		}
	}
	return false
}
