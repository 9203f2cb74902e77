package server_test

import (
	"fmt"
	"net"
	"net/netip"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/pion/stun/v4"

	"github.com/turnd/turnd/internal/auth"
	"github.com/turnd/turnd/internal/testturn"
	"github.com/turnd/turnd/pkg/allocation"
	"github.com/turnd/turnd/pkg/config"
	"github.com/turnd/turnd/pkg/server"
)

// testTimeout bounds every server test: a hung handshake or a missed
// registry notification shows up as a stack dump, not a stuck CI job.
const testTimeout = 30 * time.Second

// waitTimeout bounds each wait for something the server does asynchronously.
const waitTimeout = 5 * time.Second

// testConfig is a loopback server: one user, ephemeral ports, no
// HTTP, and loopback peers allowed so an in-test echo peer can be reached.
func testConfig() config.Config {
	cfg := config.Default()
	cfg.Listen.UDP = []string{"127.0.0.1:0"}
	cfg.Listen.TCP = []string{"127.0.0.1:0"}
	cfg.HTTP.Address = ""
	cfg.Auth.Users = map[string]string{"demo": "demo"}
	cfg.Peers.AllowLoopback = true
	return cfg
}

// testOptions are the options of a plain test server.
func testOptions() server.Options { return server.Options{Config: testConfig()} }

// start guards t (timeout and goroutine leaks), then runs a server on opts
// and closes it when the test ends. Cleanups run last-in first-out, so the
// leak check registered here runs after the server and every client
// created later are closed.
func start(t *testing.T, opts server.Options) *server.Server {
	t.Helper()
	guard(t)
	return startUnguarded(t, opts)
}

// startUnguarded is start for a test that guards itself once for several
// servers.
func startUnguarded(t *testing.T, opts server.Options) *server.Server {
	t.Helper()
	s, err := server.New(opts)
	if err != nil {
		t.Fatalf("new server: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return s
}

// guard arms a timeout that dumps every goroutine and a check that the test
// leaves no goroutine behind. pion's read loops and relay goroutines end
// asynchronously after their sockets close, so the check polls (bounded)
// until the count is back to the baseline. No tolerance is allowed: the
// tests never run in parallel, so nothing else starts goroutines meanwhile.
func guard(t *testing.T) {
	t.Helper()
	before := runtime.NumGoroutine()
	t.Cleanup(func() { waitGoroutines(t, before) })
	timer := time.AfterFunc(testTimeout, func() {
		buf := make([]byte, 1<<20)
		n := runtime.Stack(buf, true)
		panic(fmt.Sprintf("%s: timed out after %v\n%s", t.Name(), testTimeout, buf[:n]))
	})
	t.Cleanup(func() { timer.Stop() })
}

// waitGoroutines polls, bounded, until at most n goroutines run; pion's
// goroutines exit asynchronously after their sockets close and give no
// notification to wait on.
func waitGoroutines(t *testing.T, n int) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for runtime.NumGoroutine() > n {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			l := runtime.Stack(buf, true)
			t.Errorf("goroutines: %d, want at most %d\n%s", runtime.NumGoroutine(), n, buf[:l])
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// udpAddr returns the server's one UDP address.
func udpAddr(t *testing.T, s *server.Server) string {
	t.Helper()
	as := s.UDPAddrs()
	if len(as) != 1 {
		t.Fatalf("UDPAddrs: %v, want one", as)
	}
	return as[0].String()
}

// tcpAddr returns the server's one TCP address.
func tcpAddr(t *testing.T, s *server.Server) string {
	t.Helper()
	as := s.TCPAddrs()
	if len(as) != 1 {
		t.Fatalf("TCPAddrs: %v, want one", as)
	}
	return as[0].String()
}

// dial connects a test client as demo over network ("udp" or "tcp").
func dial(t *testing.T, s *server.Server, network string) *testturn.Client {
	t.Helper()
	return dialAs(t, s, network, "demo", "demo")
}

func dialAs(t *testing.T, s *server.Server, network, user, pass string) *testturn.Client {
	t.Helper()
	addr := udpAddr(t, s)
	if network == "tcp" {
		addr = tcpAddr(t, s)
	}
	return testturn.Dial(t, network, addr, user, pass)
}

// echoPeer runs a UDP echo server on 127.0.0.1 until the test ends.
func echoPeer(t *testing.T) *net.UDPAddr {
	t.Helper()
	return echoPeerOn(t, "127.0.0.1:0")
}

// echoPeerOn is echoPeer on addr ("[::1]:0" for an IPv6 peer).
func echoPeerOn(t *testing.T, addr string) *net.UDPAddr {
	t.Helper()
	pc, err := net.ListenPacket("udp", addr)
	if err != nil {
		t.Fatalf("listen echo peer: %v", err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 2048)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			_, _ = pc.WriteTo(buf[:n], from)
		}
	}()
	t.Cleanup(func() {
		pc.Close()
		<-done
	})
	return pc.LocalAddr().(*net.UDPAddr)
}

// waitCount waits, on the registry's change notifications, until it holds n
// allocations.
func waitCount(t *testing.T, r *server.Table, n int) {
	t.Helper()
	timer := time.NewTimer(waitTimeout)
	defer timer.Stop()
	for r.Count() != n {
		select {
		case <-r.Changed():
		case <-timer.C:
			t.Fatalf("registry holds %d allocations, want %d", r.Count(), n)
		}
	}
}

// wantByTransport checks the registry's per-transport counts.
func wantByTransport(t *testing.T, r *server.Table, udp, tcp, tls int) {
	t.Helper()
	got := r.ByTransport()
	want := map[allocation.Transport]int{allocation.UDP: udp, allocation.TCP: tcp, allocation.TLS: tls}
	for tr, n := range want {
		if got[tr] != n {
			t.Errorf("ByTransport()[%s] = %d, want %d (all: %v)", tr, got[tr], n, got)
		}
	}
}

// fakeObserver records what the server reports. pion's handlers call it
// before they answer, so a test may read it once the client has its
// response; the gate's own answers (300, 442) are reported just after they
// are sent, so for those a test waits with waitRejected.
type fakeObserver struct {
	mu       sync.Mutex
	created  []allocation.Transport
	rejected []string
	denied   []string
	reloads  []bool
	dropped  []string
	panics   int

	refusedConns []string
	proxy        []string      // PROXY protocol refusals
	changed      chan struct{} // coalesced wake-up after every rejection
}

func (o *fakeObserver) ProxyRefused(reason string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.proxy = append(o.proxy, reason)
	select {
	case o.wake() <- struct{}{}:
	default:
	}
}

// waitProxyRefused waits until n PROXY protocol refusals have been
// reported and returns their reasons.
func (o *fakeObserver) waitProxyRefused(t *testing.T, n int) []string {
	t.Helper()
	timer := time.NewTimer(waitTimeout)
	defer timer.Stop()
	for {
		o.mu.Lock()
		got, ch := slices.Clone(o.proxy), o.wake()
		o.mu.Unlock()
		if len(got) >= n {
			return got
		}
		select {
		case <-ch:
		case <-timer.C:
			t.Fatalf("proxy refusals %q reported, want %d", got, n)
		}
	}
}

func (o *fakeObserver) RequestDropped(reason string) {
	o.mu.Lock()
	o.dropped = append(o.dropped, reason)
	select {
	case o.wake() <- struct{}{}:
	default:
	}
	o.mu.Unlock()
}

func (o *fakeObserver) ConnectionRefused(reason string) {
	o.mu.Lock()
	o.refusedConns = append(o.refusedConns, reason)
	o.mu.Unlock()
}

// RefusedConns returns the reasons of connections refused on accept.
func (o *fakeObserver) RefusedConns() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]string(nil), o.refusedConns...)
}

// waitDropped waits until n dropped requests have been reported.
func (o *fakeObserver) waitDropped(t *testing.T, n int) {
	t.Helper()
	timer := time.NewTimer(waitTimeout)
	defer timer.Stop()
	for {
		o.mu.Lock()
		got, ch := len(o.dropped), o.wake()
		o.mu.Unlock()
		if got >= n {
			return
		}
		select {
		case <-ch:
		case <-timer.C:
			t.Fatalf("%d dropped requests reported, want %d", got, n)
		}
	}
}

func (o *fakeObserver) PanicRecovered() {
	o.mu.Lock()
	o.panics++
	o.mu.Unlock()
}

var _ server.Observer = (*fakeObserver)(nil)

func (o *fakeObserver) AllocationCreated(t allocation.Transport) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.created = append(o.created, t)
}

func (o *fakeObserver) AllocationRejected(reason string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.rejected = append(o.rejected, reason)
	select {
	case o.wake() <- struct{}{}:
	default:
	}
}

// wake returns the notification channel; o.mu is held.
func (o *fakeObserver) wake() chan struct{} {
	if o.changed == nil {
		o.changed = make(chan struct{}, 1)
	}
	return o.changed
}

// waitRejected waits until n allocation rejections have been reported.
func (o *fakeObserver) waitRejected(t *testing.T, n int) {
	t.Helper()
	timer := time.NewTimer(waitTimeout)
	defer timer.Stop()
	for {
		o.mu.Lock()
		got, ch := len(o.rejected), o.wake()
		o.mu.Unlock()
		if got >= n {
			return
		}
		select {
		case <-ch:
		case <-timer.C:
			t.Fatalf("%d allocation rejections reported, want %d", got, n)
		}
	}
}

func (o *fakeObserver) PermissionRejected(reason string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.denied = append(o.denied, reason)
}

func (o *fakeObserver) Reloaded(ok bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.reloads = append(o.reloads, ok)
}

func (o *fakeObserver) Created() []allocation.Transport {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.created)
}

func (o *fakeObserver) Rejected() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.rejected)
}

func (o *fakeObserver) Denied() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.denied)
}

func (o *fakeObserver) Reloads() []bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.reloads)
}

// mustEcho relays data through c's allocation to the echo peer and back.
func mustEcho(t *testing.T, c *testturn.Client, peer *net.UDPAddr, data string) {
	t.Helper()
	if !c.Echo(peer, data) {
		t.Fatalf("echo %q through the relay: no answer", data)
	}
}

// mustPermit creates a permission for peer.
func mustPermit(t *testing.T, c *testturn.Client, peer *net.UDPAddr) {
	t.Helper()
	if code := c.Permit(peer); code != 0 {
		t.Fatalf("CreatePermission %v: error %d", peer, code)
	}
}

// serverUnderTest lets a table test dial clients and remember the last
// Allocate response it asked for.
type serverUnderTest struct {
	*server.Server
	t      *testing.T
	client *testturn.Client
	resp   *stun.Message
}

func (s *serverUnderTest) dial(network, user, pass string) *testturn.Client {
	s.t.Helper()
	return dialAs(s.t, s.Server, network, user, pass)
}

// last sends an Allocate from c and keeps it and its response.
func (s *serverUnderTest) last(c *testturn.Client) *stun.Message {
	s.t.Helper()
	s.client, s.resp = c, c.Allocate()
	return s.resp
}

// signedRequest sends one request signed with a fresh nonce and returns the
// response as it is, whatever it is (testturn.Request insists on a nonce in
// every 401).
func signedRequest(t *testing.T, c *testturn.Client, user, pass string, method stun.Method, attrs ...stun.Setter) *stun.Message {
	t.Helper()
	build := func(extra ...stun.Setter) *stun.Message {
		setters := append([]stun.Setter{stun.TransactionID, stun.NewType(method, stun.ClassRequest)}, attrs...)
		m, err := stun.Build(append(append(setters, extra...), stun.Fingerprint)...)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	challenge := c.RoundTrip(build())
	var nonce stun.Nonce
	var realm stun.Realm
	if nonce.GetFrom(challenge) != nil || realm.GetFrom(challenge) != nil {
		t.Fatalf("unsigned %v: code %d without nonce and realm", method, testturn.ErrorCode(challenge))
	}
	key := auth.LongTermKey(user, realm.String(), pass)
	return c.RoundTrip(build(stun.NewUsername(user), realm, nonce, stun.MessageIntegrity(key)))
}

// ipCount is how many live allocations clients at ip hold.
func ipCount(t *server.Table, ip netip.Addr) int {
	n := 0
	for _, info := range t.List("") {
		if info.Tuple.Client.Addr() == ip {
			n++
		}
	}
	return n
}
