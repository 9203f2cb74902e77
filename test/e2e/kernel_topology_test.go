package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/turnd/turnd/pkg/config"
	"github.com/turnd/turnd/pkg/httpapi"
)

// The kernel path's topology: a client, turnd and a peer, each in a
// namespace of its own, joined by two veth pairs (c0–t0, t1–p0), with
// addresses from ranges that exist only inside them (benchmarking IPv4,
// documentation IPv6). turnd's namespace does not forward, so nothing
// reaches the peer unless turnd (or its tc program) relays it.
const (
	kClient4, kServer4, kRelay4, kPeer4 = "198.18.1.2", "198.18.1.1", "198.18.2.1", "198.18.2.2"
	kClient6, kServer6, kRelay6, kPeer6 = "2001:db8:1::2", "2001:db8:1::1", "2001:db8:2::1", "2001:db8:2::2"

	// kTURNPort is turnd's listening port: a fixed one is safe in a
	// namespace nobody else uses, and uclient needs it up front.
	kTURNPort = 3478
	// kEchoPort is turnutils_peer's port in the peer namespace.
	kEchoPort = 3480
)

// kernelNet is the three namespaces of the kernel path's topology.
type kernelNet struct{ client, turnd, peer netns }

// newKernelNet makes the topology; everything in it goes at cleanup.
func newKernelNet(t *testing.T) *kernelNet {
	t.Helper()
	requireNetns(t)
	k := &kernelNet{client: addNetns(t, "kcli"), turnd: addNetns(t, "ktrn"), peer: addNetns(t, "kpee")}
	k.link(t, k.client, "c0", "t0", 1, [2]string{kClient4, kClient6}, [2]string{kServer4, kServer6})
	k.link(t, k.peer, "p0", "t1", 2, [2]string{kPeer4, kPeer6}, [2]string{kRelay4, kRelay6})
	// The kernel path looks routes up as for traffic sent from lo, which the
	// kernel allows only where lo forwards; t0 and t1 still do not, so
	// turnd's namespace routes nothing between client and peer.
	if err := k.turnd.do(func() error {
		for _, f := range []string{"/proc/sys/net/ipv4/conf/lo/forwarding", "/proc/sys/net/ipv6/conf/lo/forwarding"} {
			if err := os.WriteFile(f, []byte("1"), 0o644); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatalf("forwarding on lo in %s: %v", k.turnd, err)
	}
	return k
}

// link joins host (its end named hostIf) to turnd's namespace (turndIf),
// link number n, with /24 and /64 addresses on both ends and host's
// default routes via turnd's end. The ends are made inside the namespaces,
// so their names cannot clash with another test's. Each end knows the
// other's MAC address from the start: IPv6 neighbour discovery on a veth
// just up loses the first datagrams for a second, until the kernel has
// seen the carrier come up.
func (k *kernelNet) link(t *testing.T, host netns, hostIf, turndIf string, n int, hostAddrs, turndAddrs [2]string) {
	t.Helper()
	hostMAC, turndMAC := fmt.Sprintf("02:00:00:00:%02x:02", n), fmt.Sprintf("02:00:00:00:%02x:01", n)
	if out, err := exec.Command("ip", "link", "add", hostIf, "netns", string(host), "address", hostMAC, "type", "veth",
		"peer", "name", turndIf, "netns", string(k.turnd), "address", turndMAC).CombinedOutput(); err != nil {
		t.Fatalf("ip link add %s: %v: %s", hostIf, err, out)
	}
	for _, end := range []struct {
		ns                netns
		dev, otherMAC     string
		addrs, otherAddrs [2]string
	}{{host, hostIf, turndMAC, hostAddrs, turndAddrs}, {k.turnd, turndIf, hostMAC, turndAddrs, hostAddrs}} {
		end.ns.ip(t, "addr", "add", end.addrs[0]+"/24", "dev", end.dev)
		// nodad: an address still tentative cannot be bound, and there is
		// nobody on the link to clash with.
		end.ns.ip(t, "addr", "add", end.addrs[1]+"/64", "dev", end.dev, "nodad")
		for _, a := range end.otherAddrs {
			end.ns.ip(t, "neigh", "add", a, "lladdr", end.otherMAC, "dev", end.dev, "nud", "permanent")
		}
		end.ns.ip(t, "link", "set", end.dev, "up")
	}
	host.ip(t, "route", "add", "default", "via", turndAddrs[0])
	host.ip(t, "-6", "route", "add", "default", "via", turndAddrs[1])
}

// kernelConfig is turnd in the topology: UDP on both families of t0, relay
// sockets on t1's addresses, the topology's ranges allowed as peers, the
// admin endpoints on with a token, HTTP on the namespace's loopback.
func kernelConfig(t *testing.T) config.Config {
	t.Helper()
	cfg := config.Default()
	cfg.Listen.UDP = []string{net.JoinHostPort(kServer4, strconv.Itoa(kTURNPort)), net.JoinHostPort(kServer6, strconv.Itoa(kTURNPort))}
	cfg.Listen.TCP = nil
	cfg.Relay.Address = kRelay4 + "," + kRelay6
	cfg.Peers.Allowed = []string{"198.18.0.0/15", "2001:db8::/32"}
	cfg.HTTP.Address = "127.0.0.1:0"
	cfg.HTTP.AdminTokenFile = filepath.Join(t.TempDir(), "admin-token")
	if err := os.WriteFile(cfg.HTTP.AdminTokenFile, []byte("kernel-e2e-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg.Auth.Users = map[string]string{"demo": "demo"}
	cfg.Log = config.Log{Level: "debug", Format: "json"}
	return cfg
}

// kernelServer is turnd running in the topology's turnd namespace.
type kernelServer struct {
	*turnd
	ns      netns
	cfg     config.Config
	offload string
}

// start runs turnd on cfg with relay.offload set to offload.
func (k *kernelNet) start(t *testing.T, cfg config.Config, offload string) *kernelServer {
	t.Helper()
	return k.startVia(t, cfg, offload, nil)
}

// startVia is start with turnd run through via (a command that execs
// it, such as setpriv) inside the namespace.
func (k *kernelNet) startVia(t *testing.T, cfg config.Config, offload string, via []string) *kernelServer {
	t.Helper()
	s := &kernelServer{ns: k.turnd, cfg: cfg, offload: offload}
	path := filepath.Join(t.TempDir(), "turnd.yaml")
	s.write(t, path, cfg)
	wrapper := append([]string{"ip", "netns", "exec", string(k.turnd)}, via...)
	s.turnd, _ = launch(t, path, launchOptions{wrapper: wrapper})
	return s
}

// startFails runs turnd on cfg with relay.offload set to offload, which
// must not start: it returns turnd's exit code and what it logged, and
// fails the test as soon as turnd says it serves.
func (k *kernelNet) startFails(t *testing.T, cfg config.Config, offload string) (int, string) {
	t.Helper()
	s := &kernelServer{ns: k.turnd, cfg: cfg, offload: offload}
	path := filepath.Join(t.TempDir(), "turnd.yaml")
	s.write(t, path, cfg)
	p, _ := spawn(t, path, launchOptions{wrapper: []string{"ip", "netns", "exec", string(k.turnd)}})
	deadline := time.After(10 * time.Second)
	for {
		p.mu.Lock()
		added := p.added
		p.mu.Unlock()
		if p.hasLog("turnd serving") {
			t.Fatalf("turnd with relay.offload %s serves, want it to refuse to start:\n%s", offload, p.logText())
		}
		select {
		case <-p.done:
			return p.waitExit(time.Second), p.logText()
		case <-added:
		case <-deadline:
			t.Fatalf("turnd with relay.offload %s neither served nor exited within 10s:\n%s", offload, p.logText())
		}
	}
}

// write stores cfg at path with relay.offload set.
func (s *kernelServer) write(t *testing.T, path string, cfg config.Config) {
	t.Helper()
	cfg.Relay.Offload = s.offload
	rewriteConfig(t, path, cfg)
}

// reload rewrites the config file with cfg and waits for turnd to apply it.
func (s *kernelServer) reload(t *testing.T, cfg config.Config) {
	t.Helper()
	n := s.logCount("reloaded")
	s.write(t, s.turnd.cfg, cfg)
	s.signal(syscall.SIGHUP)
	s.waitLogCount("reloaded", n+1, 5*time.Second)
}

// logCount is how many lines whose msg is msg were logged.
func (s *kernelServer) logCount(msg string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, l := range s.lines {
		if l["msg"] == msg {
			n++
		}
	}
	return n
}

// kernelCount is what turnd's kernel path says it relayed, by direction:
// datagrams and payload bytes.
type kernelCount struct{ toPeer, toClient, toPeerBytes, toClientBytes float64 }

// kernel reads turnd_kernel_relayed_packets_total and _bytes_total.
func (s *kernelServer) kernel(t *testing.T) kernelCount {
	t.Helper()
	body := s.ns.get(t, "http://"+s.HTTP+"/metrics")
	v := func(name, direction string) float64 {
		return sampleValue(t, body, "turnd_kernel_relayed_"+name+"_total{direction=\""+direction+"\"}")
	}
	return kernelCount{
		toPeer: v("packets", "to_peer"), toClient: v("packets", "to_client"),
		toPeerBytes: v("bytes", "to_peer"), toClientBytes: v("bytes", "to_client"),
	}
}

// kernelStatus is the part of /status these tests read.
type kernelStatus struct {
	Allocations struct {
		Total int `json:"total"`
	} `json:"allocations"`
	Traffic struct {
		ToPeerPackets   uint64 `json:"to_peer_packets"`
		ToPeerBytes     uint64 `json:"to_peer_bytes"`
		FromPeerPackets uint64 `json:"from_peer_packets"`
		FromPeerBytes   uint64 `json:"from_peer_bytes"`

		KernelToPeerPackets   uint64 `json:"kernel_to_peer_packets"`
		KernelToClientPackets uint64 `json:"kernel_to_client_packets"`
	} `json:"traffic"`
	Offload *struct {
		Mode       string   `json:"mode"`
		Interfaces []string `json:"interfaces"`
		Reason     string   `json:"reason"`
	} `json:"offload"`
}

// status fetches /status from inside turnd's namespace.
func (s *kernelServer) status(t *testing.T) kernelStatus {
	t.Helper()
	body := s.ns.get(t, "http://"+s.HTTP+"/status")
	var st kernelStatus
	if err := json.Unmarshal([]byte(body), &st); err != nil {
		t.Fatalf("/status: %v: %s", err, body)
	}
	return st
}

// sessions fetches /sessions with the admin token, from inside turnd's
// namespace.
func (s *kernelServer) sessions(t *testing.T) []httpapi.Session {
	t.Helper()
	token, err := os.ReadFile(s.cfg.HTTP.AdminTokenFile)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(http.MethodGet, "http://"+s.HTTP+"/sessions", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(token)))
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		DisableKeepAlives: true,
		DialContext: func(ctx context.Context, network, addr string) (c net.Conn, err error) {
			err = s.ns.do(func() error { c, err = (&net.Dialer{}).DialContext(ctx, network, addr); return err })
			return c, err
		},
	}}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("GET /sessions in %s: %v", s.ns, err)
	}
	defer resp.Body.Close()
	var page httpapi.SessionPage
	if err := json.NewDecoder(resp.Body).Decode(&page); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /sessions: %d, %v", resp.StatusCode, err)
	}
	return page.Sessions
}

// disconnect runs `turnd disconnect --user user` where turnd runs.
func (s *kernelServer) disconnect(t *testing.T, user string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "ip", "netns", "exec", string(s.ns), turndBin, "disconnect",
		"--http", s.HTTP, "--token-file", s.cfg.HTTP.AdminTokenFile, "--user", user)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), out.String()
	} else if err != nil {
		t.Fatalf("turnd disconnect: %v: %s", err, out.String())
	}
	return 0, out.String()
}

// startEchoPeer runs turnutils_peer on host:kEchoPort in the peer
// namespace, stopped by PID at cleanup, and waits until it echoes.
func (k *kernelNet) startEchoPeer(t *testing.T, host string) {
	t.Helper()
	cmd := exec.Command("ip", "netns", "exec", string(k.peer), "turnutils_peer", "-L", host, "-p", strconv.Itoa(kEchoPort))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }) // ip netns exec execs: the PID is the peer's
	var up bool
	if err := k.peer.do(func() error { up = echoesAt(host, kEchoPort); return nil }); err != nil || !up {
		t.Fatalf("turnutils_peer on %s in %s does not echo (%v)", host, k.peer, err)
	}
}

// uclient is the uclient helper run in the client namespace: a child
// started from a thread switched into a namespace is born in it.
func (k *kernelNet) uclient(t *testing.T, timeout time.Duration, server string, args ...string) uclientResult {
	t.Helper()
	var run *uclientRun
	done := make(chan error, 1)
	go func() {
		// Closed however this goroutine ends: startUclient's t.Fatal ends it with Goexit.
		var err error = fmt.Errorf("starting turnutils_uclient in %s failed", k.client)
		defer func() { done <- err }()
		runtime.LockOSThread() // never unlocked: the runtime discards the thread
		f, oerr := os.Open("/run/netns/" + string(k.client))
		if oerr != nil {
			err = fmt.Errorf("open netns: %w", oerr)
			return
		}
		defer f.Close()
		if serr := unix.Setns(int(f.Fd()), unix.CLONE_NEWNET); serr != nil {
			err = fmt.Errorf("setns %s: %w", k.client, serr)
			return
		}
		run = startUclient(t, timeout, server, args...)
		err = nil
	}()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	res := run.wait()
	if res.err != nil {
		t.Fatal(res.err)
	}
	return res
}
