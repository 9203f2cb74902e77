package e2e

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// startPeer runs turnutils_peer, coturn's UDP echo server, on a free
// loopback port and returns that port once it echoes.
func startPeer(t *testing.T) int {
	t.Helper()
	for attempt := 0; attempt < 5; attempt++ {
		port := freeUDPPort(t)
		cmd := exec.Command("turnutils_peer", "-L", "127.0.0.1", "-p", strconv.Itoa(port))
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		if echoes(port) {
			return port
		}
		_ = cmd.Process.Kill()
	}
	t.Fatal("turnutils_peer did not start")
	return 0
}

// echoes probes the peer until it answers (bounded: 50 tries, 100 ms each).
// turnutils_peer says nothing when it is ready, so this is a bounded poll:
// an ICMP "port unreachable" comes back at once until it has bound.
func echoes(port int) bool {
	c, err := net.Dial("udp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
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

// freeUDPPort returns a UDP port that was free a moment ago.
func freeUDPPort(t *testing.T) int {
	t.Helper()
	c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	return c.LocalAddr().(*net.UDPAddr).Port
}

// uclientResult is what turnutils_uclient reported.
type uclientResult struct {
	exit       int
	sent, recv int
	lost       int
	out        string
}

var (
	reTotals = regexp.MustCompile(`start_mclient: tot_send_msgs=(\d+), tot_recv_msgs=(\d+)`)
	reLost   = regexp.MustCompile(`Total lost packets (\d+) `)
)

// uclient runs turnutils_uclient against server (host:port) with args and
// parses its summary. The run is bounded by timeout.
func uclient(t *testing.T, timeout time.Duration, server string, args ...string) uclientResult {
	t.Helper()
	host, port, err := net.SplitHostPort(server)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	full := append(append([]string{}, args...), "-p", port, host)
	cmd := exec.CommandContext(ctx, "turnutils_uclient", full...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	res := uclientResult{out: out.String(), lost: -1}
	if ee, ok := err.(*exec.ExitError); ok {
		res.exit = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("turnutils_uclient: %v", err)
	}
	if ctx.Err() != nil {
		t.Fatalf("turnutils_uclient %s did not finish within %v:\n%s", strings.Join(full, " "), timeout, tail(res.out))
	}
	if m := reTotals.FindAllStringSubmatch(res.out, -1); len(m) > 0 {
		last := m[len(m)-1]
		res.sent, _ = strconv.Atoi(last[1])
		res.recv, _ = strconv.Atoi(last[2])
	}
	if m := reLost.FindStringSubmatch(res.out); m != nil {
		res.lost, _ = strconv.Atoi(m[1])
	}
	return res
}

// requireZeroLoss asserts a clean uclient run that relayed every message.
func requireZeroLoss(t *testing.T, r uclientResult, want int) {
	t.Helper()
	if r.exit != 0 || r.lost != 0 || r.sent != want || r.recv != want {
		t.Fatalf("uclient exit=%d sent=%d recv=%d lost=%d (want %d each way, 0 lost):\n%s",
			r.exit, r.sent, r.recv, r.lost, want, tail(r.out))
	}
}

func tail(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > 25 {
		lines = lines[len(lines)-25:]
	}
	return strings.Join(lines, "\n")
}
