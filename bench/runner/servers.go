package main

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/pion/stun/v4"

	"github.com/turnd/turnd/bench/procstat"
)

// Both servers get the same credentials, realm and relay port range. The
// range sits below Linux's ephemeral ports (32768-60999), so relay ports
// never collide with the load generators' client sockets.
const (
	benchUser  = "demo"
	benchPass  = "demo"
	benchRealm = "turnd.local"
	minRelay   = 10000
	maxRelay   = 30000
)

// serverKind says how to start and stop one of the servers compared.
type serverKind struct {
	name string
	// argv returns the command line for a server on port, writing any
	// files it needs into dir.
	argv func(bin string, port int, dir string, o serverOpts) ([]string, error)
	// stopSignal ends the server at once: coturn exits on SIGTERM; turnd
	// drains on SIGTERM and exits at once on SIGQUIT.
	stopSignal syscall.Signal
}

// serverKinds lists the servers compared, turnd first: every scenario runs
// them in this order.
func serverKinds() []serverKind {
	return []serverKind{
		{name: "turnd", argv: turndArgv, stopSignal: syscall.SIGQUIT},
		{name: "coturn", argv: coturnArgv, stopSignal: syscall.SIGTERM},
	}
}

// turndConfig is turnd's benchmark configuration: its defaults except the
// port, the relay range, the user and loopback peers; no HTTP listener
// (coturn runs without --prometheus). udp_sockets 0 means one SO_REUSEPORT
// socket per CPU, like coturn's relay threads. The per-IP limit on requests
// without credentials is off: every load generator here is 127.0.0.1, so it
// would throttle the benchmark itself (each client's first Allocate is
// unsigned), and coturn has no such limit. So are the per-user, per-IP,
// per-prefix and per-IP and per-prefix connection quotas: one user from one
// address makes every allocation here, as coturn (unlimited by default)
// lets it.
const turndConfig = `# Written by bench/runner for one benchmark run.
realm: %s
listen:
  udp: ["127.0.0.1:%d"]
  tcp: ["127.0.0.1:%d"]
  udp_sockets: 0
relay:
  address: 127.0.0.1
  min_port: %d
  max_port: %d
auth:
  users:
    %s: %s
peers:
  allow_loopback: true
` + quotasOff + `  max_bps: %d
http:
  address: ""
`

// quotasOff is the limits section of both turnd configurations: every
// rate limit and quota off, as coturn (unlimited by default) runs.
const quotasOff = `limits:
  unauthenticated_rate: 0
  user_allocate_rate: 0
  user_allocations: 0
  ip_allocations: 0
  prefix_allocations: 0
  connections_per_ip: 0
  connections_per_prefix: 0
`

func turndArgv(bin string, port int, dir string, o serverOpts) ([]string, error) {
	cfg := filepath.Join(dir, "turnd.yaml")
	body := fmt.Sprintf(turndConfig, benchRealm, port, port, minRelay, maxRelay, benchUser, benchPass, o.maxBPS)
	if err := os.WriteFile(cfg, []byte(body), 0o644); err != nil {
		return nil, fmt.Errorf("write turnd config: %w", err)
	}
	return []string{bin, "--config", cfg}, nil
}

// coturnArgv is coturn on loopback, as every scenario but netns runs it.
func coturnArgv(bin string, port int, dir string, o serverOpts) ([]string, error) {
	argv := coturnCommand(bin, coturnSite{
		listenIP: "127.0.0.1", relayIP: "127.0.0.1", port: port,
		peers: "--allow-loopback-peers", files: "coturn",
	}, dir, o.cpus)
	if o.maxBPS > 0 {
		argv = append(argv, "--max-bps="+strconv.FormatInt(o.maxBPS/8, 10)) // coturn counts bytes/s
	}
	return argv, nil
}

// coturnSite is what differs between the places coturn runs.
type coturnSite struct {
	listenIP, relayIP string
	port              int
	// peers is the flag that lets coturn relay to the benchmark's peers.
	peers string
	// files names the pid and log files in the run's directory.
	files string
}

// coturnCommand is coturn 4.6.1 with explicit flags and no config file
// (-n); its CLI, TLS and DTLS listeners are off, its Prometheus exporter is
// off by default, and it gets one relay thread per CPU (its default, made
// explicit).
func coturnCommand(bin string, s coturnSite, dir string, cpus int) []string {
	return []string{bin, "-n",
		"--listening-ip=" + s.listenIP, "--listening-port=" + strconv.Itoa(s.port),
		"--relay-ip=" + s.relayIP,
		"--min-port=" + strconv.Itoa(minRelay), "--max-port=" + strconv.Itoa(maxRelay),
		"--lt-cred-mech", "--user=" + benchUser + ":" + benchPass, "--realm=" + benchRealm,
		s.peers, "--no-tls", "--no-dtls", "--no-cli",
		"--relay-threads=" + strconv.Itoa(cpus),
		"--pidfile=" + filepath.Join(dir, s.files+".pid"),
		"--log-file=" + filepath.Join(dir, s.files+".log"), "--simple-log",
	}
}

// serverOpts is what every server of one run is given alike.
type serverOpts struct {
	cpus int
	// maxBPS is each allocation's bandwidth limit in bit/s each way; 0 is
	// none. It measures what enforcing a limit costs, with a limit high
	// enough that the load never meets it.
	maxBPS int64
}

// server is one running server.
type server struct {
	kind serverKind
	port int
	proc *process
}

// startServer starts a fresh server of kind on a free port and waits until
// it answers STUN over UDP and accepts TCP.
func startServer(kind serverKind, bin, dir string, o serverOpts) (*server, error) {
	port, err := freePort(false)
	if err != nil {
		return nil, err
	}
	argv, err := kind.argv(bin, port, dir, o)
	if err != nil {
		return nil, err
	}
	p, err := start(kind.name, filepath.Join(dir, kind.name+".out"), argv...)
	if err != nil {
		return nil, err
	}
	s := &server{kind: kind, port: port, proc: p}
	if err := s.waitReady(10 * time.Second); err != nil {
		s.stop()
		return nil, err
	}
	return s, nil
}

func (s *server) addr() string { return "127.0.0.1:" + strconv.Itoa(s.port) }

func (s *server) pid() int { return s.proc.pid() }

func (s *server) sample() (procstat.Sample, error) { return procstat.Read(s.pid()) }

func (s *server) stop() { s.proc.stop(s.kind.stopSignal) }

// waitReady sends STUN Binding requests every 100 ms until one is
// answered, then checks the TCP listener.
func (s *server) waitReady(limit time.Duration) error {
	deadline := time.Now().Add(limit)
	conn, err := net.Dial("udp4", s.addr())
	if err != nil {
		return fmt.Errorf("dial %s: %w", s.kind.name, err)
	}
	defer conn.Close()
	req := stun.MustBuild(stun.TransactionID, stun.BindingRequest)
	buf := make([]byte, 1500)
	for time.Now().Before(deadline) {
		if s.proc.exited() {
			return fmt.Errorf("%s exited during start: %w", s.kind.name, errNotReady)
		}
		_, _ = conn.Write(req.Raw)
		_ = conn.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
		if n, err := conn.Read(buf); err == nil && stun.IsMessage(buf[:n]) {
			tc, err := net.DialTimeout("tcp4", s.addr(), time.Second)
			if err != nil {
				return fmt.Errorf("%s tcp: %w", s.kind.name, err)
			}
			return tc.Close()
		}
	}
	return fmt.Errorf("%s on %s after %v: %w", s.kind.name, s.addr(), limit, errNotReady)
}
