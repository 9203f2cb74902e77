package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/pion/stun/v4"
)

// netnsKind is one of the servers the netns scenario compares.
type netnsKind struct {
	name string
	// offload is turnd's relay.offload; "" means coturn.
	offload string
	// maxBPS is turnd's limits.max_bps (0: none). An allocation with a
	// rate stays in user space with the kernel path on: the row measures
	// what that choice costs, at the reference load only (the rate is far
	// above the load's, so nothing is held back).
	maxBPS int64
}

func netnsKinds() []netnsKind {
	return []netnsKind{{name: "coturn"}, {name: "turnd-user", offload: "off"}, {name: "turnd-kernel", offload: "tc"},
		{name: "turnd-kernel-limited", offload: "tc", maxBPS: 1_000_000_000}}
}

// netnsMetrics is turnd's metrics listener, on the turnd namespace's own
// loopback (coturn runs without --prometheus, as on loopback).
const netnsMetrics = "127.0.0.1:9641"

// netnsTurndConfig is turndConfig's settings on the topology's addresses:
// peers in 198.18.0.0/15 instead of loopback ones, a metrics listener for
// the kernel path's counters, relay.offload as the row.
const netnsTurndConfig = `# Written by bench/runner for the netns scenario.
realm: %s
listen:
  udp: ["%s:%d"]
  udp_sockets: 0
relay:
  address: %s
  min_port: %d
  max_port: %d
  offload: %s
auth:
  users:
    %s: %s
peers:
  allowed: ["198.18.0.0/15"]
` + quotasOff + `  max_bps: %d
http:
  address: "%s"
`

// netnsArgv is the server's command line inside the turnd namespace.
func netnsArgv(k netnsKind, bins map[string]string, dir string, cpus int) ([]string, error) {
	argv := []string{"ip", "netns", "exec"}
	if k.offload == "" {
		coturn := coturnCommand(bins["coturn"], coturnSite{
			listenIP: turndClientIP, relayIP: turndRelayIP, port: netnsPort,
			peers: "--allowed-peer-ip=198.18.0.0-198.19.255.255", files: "netns-coturn",
		}, dir, cpus)
		return append(append(argv, "NS"), coturn...), nil
	}
	cfg := filepath.Join(dir, k.name+".yaml")
	body := fmt.Sprintf(netnsTurndConfig, benchRealm, turndClientIP, netnsPort, turndRelayIP, minRelay, maxRelay,
		k.offload, benchUser, benchPass, k.maxBPS, netnsMetrics)
	if err := os.WriteFile(cfg, []byte(body), 0o644); err != nil {
		return nil, fmt.Errorf("write %s config: %w", k.name, err)
	}
	return append(argv, "NS", bins["turnd"], "--config", cfg), nil
}

// errUnavailable marks a server that refused to start here: the row
// reports it, the benchmark goes on.
type errUnavailable struct{ reason string }

func (e errUnavailable) Error() string { return "unavailable: " + e.reason }

// startNetnsServer starts k in the turnd namespace and waits until it
// answers STUN from the client namespace. ip netns exec execs the server,
// so the PID is the server's.
func startNetnsServer(topo topology, k netnsKind, bins map[string]string, dir string, cpus int) (*server, error) {
	argv, err := netnsArgv(k, bins, dir, cpus)
	if err != nil {
		return nil, err
	}
	argv[3] = topo.turnd
	logPath := filepath.Join(dir, k.name+".out")
	p, err := start(k.name, logPath, argv...)
	if err != nil {
		return nil, err
	}
	sig := syscall.SIGQUIT // turnd: exit at once, no drain
	if k.offload == "" {
		sig = syscall.SIGTERM
	}
	s := &server{kind: serverKind{name: k.name, stopSignal: sig}, port: netnsPort, proc: p}
	if err := waitReadyNetns(topo, s, 10*time.Second); err != nil {
		s.stop()
		if p.exited() {
			return nil, errUnavailable{reason: lastLines(logPath, 2)}
		}
		return nil, err
	}
	return s, nil
}

// waitReadyNetns sends STUN Binding requests from the client namespace
// every 100 ms until one is answered.
func waitReadyNetns(topo topology, s *server, limit time.Duration) error {
	var conn net.Conn
	addr := net.JoinHostPort(turndClientIP, strconv.Itoa(netnsPort))
	if err := inNetns(topo.client, func() (err error) {
		conn, err = net.Dial("udp4", addr)
		return err
	}); err != nil {
		return fmt.Errorf("dial %s from the client namespace: %w", s.kind.name, err)
	}
	defer conn.Close()
	req := stun.MustBuild(stun.TransactionID, stun.BindingRequest)
	buf := make([]byte, 1500)
	for deadline := time.Now().Add(limit); time.Now().Before(deadline); {
		if s.proc.exited() {
			return fmt.Errorf("%s exited during start: %w", s.kind.name, errNotReady)
		}
		_, _ = conn.Write(req.Raw)
		_ = conn.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
		if n, err := conn.Read(buf); err == nil && stun.IsMessage(buf[:n]) {
			return nil
		}
	}
	return fmt.Errorf("%s on %s after %v: %w", s.kind.name, addr, limit, errNotReady)
}

// lastLines returns the last n non-empty lines of a log, joined: why a
// server refused to start.
func lastLines(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "exited during start"
	}
	var lines []string
	for _, l := range strings.Split(string(b), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	if len(lines) == 0 {
		return "exited during start with no output"
	}
	return strings.Join(tail(lines, n), " / ")
}

// scrapeNetns reads turnd's /metrics in the turnd namespace and sums the
// series of each name asked for (every label set).
func scrapeNetns(topo topology, names ...string) (map[string]float64, error) {
	tr := &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		var c net.Conn
		err := inNetns(topo.turnd, func() (err error) {
			c, err = (&net.Dialer{Timeout: 2 * time.Second}).DialContext(ctx, network, addr)
			return err
		})
		return c, err
	}}
	defer tr.CloseIdleConnections()
	cl := &http.Client{Transport: tr, Timeout: 5 * time.Second}
	resp, err := cl.Get("http://" + netnsMetrics + "/metrics")
	if err != nil {
		return nil, fmt.Errorf("scrape turnd metrics: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("scrape turnd metrics: %s: %w", resp.Status, errParse)
	}
	return sumSeries(resp.Body, names...)
}

// sumSeries sums, for each name, the values of its samples in Prometheus's
// text format ("name{labels} value" or "name value").
func sumSeries(r io.Reader, names ...string) (map[string]float64, error) {
	out := make(map[string]float64, len(names))
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			continue
		}
		for _, n := range names {
			rest, ok := strings.CutPrefix(line, n)
			if !ok || rest == "" || (rest[0] != '{' && rest[0] != ' ') {
				continue
			}
			f := strings.Fields(rest[strings.LastIndexByte(rest, '}')+1:])
			if len(f) == 0 {
				return nil, fmt.Errorf("metric %s: no value in %q: %w", n, line, errParse)
			}
			v, err := strconv.ParseFloat(f[0], 64)
			if err != nil {
				return nil, fmt.Errorf("metric %s: %w", n, err)
			}
			out[n] += v
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read metrics: %w", err)
	}
	return out, nil
}
