package e2e

import (
	"errors"
	"net"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// TestUclientDualAllocation runs coturn's turnutils_uclient -Z (a dual
// allocation: ADDITIONAL-ADDRESS-FAMILY IPv6, coturn's type 0x8032) against
// turnd relaying in both families, once to an IPv4 peer and once to an IPv6
// one: each run must relay every message both ways (RFC 8656 §7.2, and
// docs/control-plane.md section 3). uclient never releases the second
// allocation of each pair and sends its Refreshes with REQUESTED-ADDRESS-FAMILY
// 1, 2 or none at random, so only its own totals are asserted.
func TestUclientDualAllocation(t *testing.T) {
	cfg := testConfig()
	cfg.Relay.Address = "127.0.0.1,::1"
	srv := start(t, cfg)

	const m, n = 4, 50
	for _, host := range []string{"127.0.0.1", "::1"} {
		t.Run(host, func(t *testing.T) {
			peer := strconv.Itoa(startPeerAt(t, host))
			r := uclient(t, uclientTimeout, srv.UDP, "-Z", "-u", "demo", "-w", "demo",
				"-e", host, "-r", peer, "-m", strconv.Itoa(m), "-n", strconv.Itoa(n), "-l", "120")
			requireZeroLoss(t, r, m*n)
		})
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
