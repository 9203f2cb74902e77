package e2e

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/pion/stun/v4"
	"golang.org/x/sys/unix"
	"gopkg.in/yaml.v3"

	"github.com/turnd/turnd/internal/testturn"
	"github.com/turnd/turnd/pkg/config"
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
	s := &kernelServer{ns: k.turnd, cfg: cfg, offload: offload}
	path := filepath.Join(t.TempDir(), "turnd.yaml")
	s.write(t, path, cfg)
	s.turnd, _ = launch(t, path, launchOptions{wrapper: []string{"ip", "netns", "exec", string(k.turnd)}})
	return s
}

// write stores cfg at path with relay.offload set. The key is added to
// the YAML rather than the struct so the harness does not depend on how
// pkg/config spells the field.
func (s *kernelServer) write(t *testing.T, path string, cfg config.Config) {
	t.Helper()
	b, err := yaml.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := yaml.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	doc["relay"].(map[string]any)["offload"] = s.offload
	if b, err = yaml.Marshal(doc); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
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

// kernelPeer is a UDP socket in the peer namespace that keeps every
// datagram it receives, so a test can say what reached the peer and from
// where.
type kernelPeer struct {
	conn *net.UDPConn
	got  chan datagram
}

// datagram is one datagram a kernelPeer received.
type datagram struct {
	from    netip.AddrPort
	payload string
}

// listenPeer opens a kernelPeer on host (an address of p0) and a port the
// kernel picks.
func (k *kernelNet) listenPeer(t *testing.T, host string) *kernelPeer {
	t.Helper()
	var conn *net.UDPConn
	if err := k.peer.do(func() (err error) {
		conn, err = net.ListenUDP("udp", &net.UDPAddr{IP: net.ParseIP(host)})
		return err
	}); err != nil {
		t.Fatalf("listen on %s in %s: %v", host, k.peer, err)
	}
	p := &kernelPeer{conn: conn, got: make(chan datagram, 4096)}
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		buf := make([]byte, 2048)
		for {
			n, from, err := conn.ReadFromUDPAddrPort(buf)
			if err != nil {
				return // closed at cleanup
			}
			p.got <- datagram{from: from, payload: string(buf[:n])}
		}
	}()
	t.Cleanup(func() { conn.Close(); <-stopped })
	return p
}

// addr is the peer's address as the client names it.
func (p *kernelPeer) addr() *net.UDPAddr { return p.conn.LocalAddr().(*net.UDPAddr) }

// next waits for the next datagram, at most timeout (none: what has arrived).
func (p *kernelPeer) next(timeout time.Duration) (datagram, bool) {
	select { // first what has arrived: a timer already due would win half the time
	case d := <-p.got:
		return d, true
	default:
	}
	select {
	case d := <-p.got:
		return d, true
	case <-time.After(timeout):
		return datagram{}, false
	}
}

// send sends payload to to from the peer.
func (p *kernelPeer) send(t *testing.T, to *net.UDPAddr, payload string) {
	t.Helper()
	if _, err := p.conn.WriteToUDP([]byte(payload), to); err != nil {
		t.Fatalf("peer send to %v: %v", to, err)
	}
}

// kernelChannel is one allocation of a Go TURN client in the client
// namespace with one channel bound to a kernelPeer.
type kernelChannel struct {
	c      *testturn.Client
	relay  *net.UDPAddr
	peer   *kernelPeer
	number uint16
}

// family6 is REQUESTED-ADDRESS-FAMILY IPv6.
var family6 = testturn.RawAttr(stun.AttrRequestedAddressFamily, []byte{0x02, 0, 0, 0})

// openChannel allocates from client (an address of c0) at server, with
// extra Allocate attributes, and binds channel 0x4000 to peer.
func (k *kernelNet) openChannel(t *testing.T, client, server string, peer *kernelPeer, extra ...stun.Setter) *kernelChannel {
	t.Helper()
	c := k.client.dialFrom(t, "udp", client, server)
	resp := c.Allocate(extra...)
	if code := testturn.ErrorCode(resp); code != 0 {
		t.Fatalf("Allocate from %s to %s: error %d", client, server, code)
	}
	ch := &kernelChannel{c: c, relay: testturn.Relayed(t, resp), peer: peer, number: 0x4000}
	if code := testturn.ErrorCode(c.ChannelBind(ch.number, peer.addr())); code != 0 {
		t.Fatalf("ChannelBind to %v: error %d", peer.addr(), code)
	}
	return ch
}

// relayBoth sends payloads as ChannelData to the peer, one after another
// with no wait, and the peer sends each back to the relay address: every
// one must arrive unchanged, at the peer from the relay address and at the
// client as ChannelData on the channel.
func (ch *kernelChannel) relayBoth(t *testing.T, payloads []string) {
	t.Helper()
	for _, p := range payloads {
		ch.c.SendChannel(ch.number, []byte(p))
	}
	for i, want := range payloads {
		d, ok := ch.peer.next(5 * time.Second)
		if !ok {
			t.Fatalf("%d/%d datagrams sent on channel %#x reached the peer", i, len(payloads), ch.number)
		}
		if d.payload != want || d.from != ch.relay.AddrPort() {
			t.Fatalf("the peer got %d bytes from %v, want %d bytes from the relay %v (datagram %d)",
				len(d.payload), d.from, len(want), ch.relay, i)
		}
	}
	for _, p := range payloads {
		ch.peer.send(t, ch.relay, p)
	}
	for i, want := range payloads {
		f, err := ch.c.ReadFrame(5 * time.Second)
		if err != nil {
			t.Fatalf("%d/%d datagrams the peer sent reached the client: %v", i, len(payloads), err)
		}
		if len(f) < 4 || binary.BigEndian.Uint16(f) != ch.number || string(f[4:]) != want {
			t.Fatalf("the client got %d bytes, want ChannelData on %#x with %d bytes (datagram %d)", len(f), ch.number, len(want), i)
		}
	}
}

// throughKernel is relayBoth, and requires the kernel path to have counted
// at least half of the datagrams each way (a channel's first datagrams may
// take user space); where it counted all of a direction, its bytes must be
// the payloads' exactly.
func (ch *kernelChannel) throughKernel(t *testing.T, srv *kernelServer, payloads []string) {
	t.Helper()
	before := srv.kernel(t)
	ch.relayBoth(t, payloads)
	after := srv.kernel(t)
	n, size := float64(len(payloads)), 0.0
	for _, p := range payloads {
		size += float64(len(p))
	}
	toPeer, toClient := after.toPeer-before.toPeer, after.toClient-before.toClient
	if toPeer < n/2 || toClient < n/2 || toPeer > n || toClient > n {
		t.Fatalf("the kernel path counted %v to the peer and %v to the client of %v datagrams each way, want at least half",
			toPeer, toClient, n)
	}
	if b := after.toPeerBytes - before.toPeerBytes; toPeer == n && b != size {
		t.Errorf("the kernel path relayed all %v datagrams to the peer and counted %v bytes, want %v", n, b, size)
	}
	if b := after.toClientBytes - before.toClientBytes; toClient == n && b != size {
		t.Errorf("the kernel path relayed all %v datagrams to the client and counted %v bytes, want %v", n, b, size)
	}
}

// requireStopped sends n datagrams each way on a channel that must no
// longer be relayed by the kernel: the kernel counters stay where they
// are, nothing reaches the peer, and the client gets no ChannelData
// (userSpaceData: it may get the peer's datagrams as Data indications).
// Absence has no event to wait for: quiet bounds the wait.
func (ch *kernelChannel) requireStopped(t *testing.T, srv *kernelServer, n int, userSpaceData bool) {
	t.Helper()
	const quiet = 500 * time.Millisecond
	before := srv.kernel(t)
	for i := range n {
		ch.c.SendChannel(ch.number, []byte(fmt.Sprintf("after-%d", i)))
		ch.peer.send(t, ch.relay, fmt.Sprintf("back-%d", i))
	}
	channelData, indications := 0, 0
	deadline := time.Now().Add(quiet)
	for time.Now().Before(deadline) {
		f, err := ch.c.ReadFrame(time.Until(deadline))
		if err != nil {
			break
		}
		if len(f) >= 4 && f[0]&0xC0 == 0x40 {
			channelData++
		} else {
			indications++
		}
	}
	reached := 0
	for {
		if _, ok := ch.peer.next(time.Until(deadline)); !ok {
			break
		}
		reached++
	}
	if reached > 0 || channelData > 0 || (!userSpaceData && indications > 0) {
		t.Errorf("after the event: %d/%d datagrams reached the peer, the client got %d ChannelData and %d other messages of %d",
			reached, n, channelData, indications, n)
	}
	if after := srv.kernel(t); after != before {
		t.Errorf("after the event the kernel path relayed %v to the peer and %v to the client, want none",
			after.toPeer-before.toPeer, after.toClient-before.toClient)
	}
}

// drainClient reads and drops what reaches the client until nothing has
// for quiet.
func (ch *kernelChannel) drainClient(quiet time.Duration) {
	for i := 0; i < 1000; i++ {
		if _, err := ch.c.ReadFrame(quiet); err != nil {
			return
		}
	}
}

// payloads are n datagrams, each tagged, of lengths cycling through ones
// that need ChannelData padding over streams (UDP sends none) up to a
// 1200-byte media packet; the shortest are as long as the tag.
func payloads(tag string, n int) []string {
	sizes := []int{1, 3, 4, 100, 161, 1200}
	out := make([]string, n)
	for i := range out {
		p := []byte(fmt.Sprintf("%s-%d-", tag, i))
		for len(p) < sizes[i%len(sizes)] {
			p = append(p, byte('a'+len(p)%26))
		}
		out[i] = string(p)
	}
	return out
}
