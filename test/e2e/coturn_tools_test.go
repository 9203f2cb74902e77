package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// startPeer runs turnutils_peer, coturn's UDP echo server, on a free
// loopback port and returns that port once it echoes.
func startPeer(t *testing.T) int {
	t.Helper()
	return startPeerAt(t, "127.0.0.1")
}

// echoes probes the IPv4 loopback peer on port until it answers.
func echoes(port int) bool { return echoesAt("127.0.0.1", port) }

// freeUDPPort returns a UDP port that was free a moment ago.
func freeUDPPort(t *testing.T) int {
	t.Helper()
	return freePortOn(t, "udp4", "127.0.0.1")
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

// echoesAt probes the peer on host until it answers (bounded: 50 tries,
// 100 ms each). turnutils_peer says nothing when it is ready, so this is a
// bounded poll: an ICMP "port unreachable" comes back at once until it has
// bound.
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

// uclientResult is what turnutils_uclient reported.
type uclientResult struct {
	exit       int
	sent, recv int
	lost       int
	out        string
	err        error // the run itself failed (timeout, could not start)
}

var (
	reTotals = regexp.MustCompile(`start_mclient: tot_send_msgs=(\d+), tot_recv_msgs=(\d+)`)
	reLost   = regexp.MustCompile(`Total lost packets (\d+) `)
)

// uclient runs turnutils_uclient against server (host:port) with args and
// parses its summary. The run is bounded by timeout.
func uclient(t *testing.T, timeout time.Duration, server string, args ...string) uclientResult {
	t.Helper()
	r := startUclient(t, timeout, server, args...)
	res := r.wait()
	if res.err != nil {
		t.Fatal(res.err)
	}
	return res
}

// uclientRun is a turnutils_uclient running in the background.
type uclientRun struct {
	// sending is closed once uclient reports its first sent messages: every
	// client has allocated and bound its channel by then.
	sending chan struct{}
	done    chan uclientResult
}

// startUclient starts turnutils_uclient; wait collects its result. Safe to
// use from any goroutine: problems are returned in the result, not fatal.
func startUclient(t *testing.T, timeout time.Duration, server string, args ...string) *uclientRun {
	t.Helper()
	host, port, err := net.SplitHostPort(server)
	if err != nil {
		t.Fatal(err)
	}
	r := &uclientRun{sending: make(chan struct{}), done: make(chan uclientResult, 1)}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	full := append(append([]string{}, args...), "-p", port, host)
	cmd := exec.CommandContext(ctx, "turnutils_uclient", full...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out := &watchedOutput{sending: r.sending}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatal(err)
	}
	go func() {
		defer cancel()
		err := cmd.Wait()
		res := uclientResult{out: out.String(), lost: -1}
		var ee *exec.ExitError
		switch {
		case ctx.Err() != nil:
			res.err = fmt.Errorf("turnutils_uclient %s did not finish within %v:\n%s", strings.Join(full, " "), timeout, tail(res.out))
		case errors.As(err, &ee):
			res.exit = ee.ExitCode()
		case err != nil:
			res.err = fmt.Errorf("turnutils_uclient: %w", err)
		}
		if m := reTotals.FindAllStringSubmatch(res.out, -1); len(m) > 0 {
			last := m[len(m)-1]
			res.sent, _ = strconv.Atoi(last[1])
			res.recv, _ = strconv.Atoi(last[2])
		}
		if m := reLost.FindStringSubmatch(res.out); m != nil {
			res.lost, _ = strconv.Atoi(m[1])
		}
		r.done <- res
	}()
	return r
}

func (r *uclientRun) wait() uclientResult { return <-r.done }

// reSending matches uclient's per-second progress line once messages flow.
var reSending = regexp.MustCompile(`tot_send_msgs=[1-9]`)

// watchedOutput collects uclient's output and closes sending at the first
// progress line that counts sent messages.
type watchedOutput struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	sending chan struct{}
	seen    bool
}

func (w *watchedOutput) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if !w.seen && reSending.Match(w.buf.Bytes()) {
		w.seen = true
		close(w.sending)
	}
	return len(p), nil
}

func (w *watchedOutput) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
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
