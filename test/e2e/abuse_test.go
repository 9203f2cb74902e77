package e2e

import (
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"

	"github.com/pion/stun/v4"

	"github.com/turnd/turnd/internal/testturn"
)

// TestUnauthenticatedRateLimit: one host flooding unauthenticated requests
// gets at most its burst answered; another host is unaffected.
func TestUnauthenticatedRateLimit(t *testing.T) {
	cfg := testConfig()
	cfg.Limits.UnauthenticatedRate = 5 // burst 10
	srv := start(t, cfg)

	flood, err := net.DialUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 2)}, udpAddr(t, srv.UDP))
	if err != nil {
		t.Fatal(err)
	}
	defer flood.Close()
	const sent = 60
	for i := 0; i < sent; i++ {
		req, _ := stun.Build(stun.TransactionID, stun.BindingRequest, stun.Fingerprint)
		if _, err := flood.Write(req.Raw); err != nil {
			t.Fatal(err)
		}
	}
	answered := 0
	buf := make([]byte, 1500)
	for {
		_ = flood.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
		if _, err := flood.Read(buf); err != nil {
			break
		}
		answered++
	}
	// The burst (10) plus what refilled while the flood was sent.
	if answered < 10 || answered > 15 {
		t.Fatalf("%d of %d flood requests answered, want the burst of about 10", answered, sent)
	}
	if got := srv.metric(`turnd_requests_dropped_total{reason="rate_limited"}`); got < sent-15 {
		t.Fatalf("rate_limited drops = %v", got)
	}
	// Another client host is not affected.
	testturn.Dial(t, "udp", srv.UDP, "demo", "demo").MustAllocate()
}

// TestIdleConnectionTimeout: a TCP connection that never allocates is cut;
// one that holds an allocation is not.
func TestIdleConnectionTimeout(t *testing.T) {
	cfg := testConfig()
	cfg.Limits.IdleConnectionTimeout = time.Second
	srv := start(t, cfg)
	busy := testturn.Dial(t, "tcp", srv.TCP, "demo", "demo")
	busy.MustAllocate()

	idle, err := net.Dial("tcp", srv.TCP)
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	accepted := time.Now()
	_ = idle.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := idle.Read(make([]byte, 1)); !errors.Is(err, io.EOF) && !isReset(err) {
		t.Fatalf("idle connection: read returned %v, want the server to close it", err)
	}
	if d := time.Since(accepted); d < 900*time.Millisecond || d > 5*time.Second {
		t.Fatalf("idle connection closed after %v, want about 1s", d)
	}
	if code := busy.Refresh(time.Minute); code != 0 {
		t.Fatalf("the allocated connection was cut too: refresh %d", code)
	}
}

func isReset(err error) bool {
	var ne *net.OpError
	return errors.As(err, &ne) && !errors.Is(err, os.ErrDeadlineExceeded)
}

// TestPermissionAndChannelCaps: past the caps, CreatePermission and
// ChannelBind get 508; refreshing what exists still works.
func TestPermissionAndChannelCaps(t *testing.T) {
	cfg := testConfig()
	cfg.Limits.PermissionsPerAllocation = 2
	cfg.Limits.ChannelsPerAllocation = 1
	srv := start(t, cfg)
	c := testturn.Dial(t, "udp", srv.UDP, "demo", "demo")
	c.MustAllocate()
	peer := func(last byte) *net.UDPAddr { return &net.UDPAddr{IP: net.IPv4(127, 0, 0, last), Port: 5000} }
	for _, p := range []*net.UDPAddr{peer(10), peer(11), peer(10)} {
		if code := c.Permit(p); code != 0 {
			t.Fatalf("permission %v: %d", p, code)
		}
	}
	resp := c.Request(stun.MethodCreatePermission, testturn.PeerAddr(peer(12)))
	if code := testturn.ErrorCode(resp); code != 508 || !c.Signed(resp) {
		t.Fatalf("third peer: %d, want signed 508", code)
	}
	if code := testturn.ErrorCode(c.ChannelBind(0x4000, peer(10))); code != 0 {
		t.Fatalf("first channel: %d", code)
	}
	if code := testturn.ErrorCode(c.ChannelBind(0x4000, peer(10))); code != 0 {
		t.Fatalf("refreshing the channel: %d", code)
	}
	if code := testturn.ErrorCode(c.ChannelBind(0x4001, peer(11))); code != 508 {
		t.Fatalf("second channel: %d, want 508", code)
	}
	if got := srv.metric(`turnd_permissions_rejected_total{reason="capacity"}`); got != 2 {
		t.Fatalf("capacity refusals = %v, want 2", got)
	}
}

// TestPerIPAllocationQuota: limits.ip_allocations counts per client host.
func TestPerIPAllocationQuota(t *testing.T) {
	cfg := testConfig()
	cfg.Limits.IPAllocations = 1
	srv := start(t, cfg)
	testturn.Dial(t, "udp", srv.UDP, "demo", "demo").MustAllocate()
	if code := testturn.ErrorCode(testturn.Dial(t, "udp", srv.UDP, "demo", "demo").Allocate()); code != 486 {
		t.Fatalf("second allocation from 127.0.0.1: %d, want 486", code)
	}
	testturn.DialFrom(t, "udp", "127.0.0.2", srv.UDP, "demo", "demo").MustAllocate()
}

func udpAddr(t *testing.T, s string) *net.UDPAddr {
	t.Helper()
	a, err := net.ResolveUDPAddr("udp", s)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// TestNoRelayIntoTurndItself: with loopback peers allowed, a channel to
// turnd's own TURN or HTTP socket is still refused (403), and a peer port 0
// is no peer at all (400); other loopback peers are fine.
func TestNoRelayIntoTurndItself(t *testing.T) {
	srv := start(t, testConfig())
	c := testturn.Dial(t, "udp", srv.UDP, "demo", "demo")
	c.MustAllocate()
	for i, own := range []string{srv.UDP, srv.TCP, srv.HTTP} {
		resp := c.ChannelBind(uint16(0x4000+i), udpAddr(t, own))
		if code := testturn.ErrorCode(resp); code != 403 || !c.Signed(resp) {
			t.Errorf("ChannelBind to turnd's own %s: %d, want signed 403", own, code)
		}
	}
	if code := testturn.ErrorCode(c.ChannelBind(0x4010, &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 0})); code != 400 {
		t.Errorf("ChannelBind to port 0: %d, want 400", code)
	}
	if code := testturn.ErrorCode(c.ChannelBind(0x4011, &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 9})); code != 0 {
		t.Errorf("ChannelBind to an ordinary loopback peer: %d", code)
	}
}

// TestNoAllocationIs437: Refresh, CreatePermission and ChannelBind from a
// 5-tuple without an allocation get 437, signed, instead of silence.
func TestNoAllocationIs437(t *testing.T) {
	srv := start(t, testConfig())
	for _, network := range []string{"udp", "tcp"} {
		addr := srv.UDP
		if network == "tcp" {
			addr = srv.TCP
		}
		c := testturn.Dial(t, network, addr, "demo", "demo")
		peer := &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 9}
		for name, resp := range map[string]*stun.Message{
			"refresh":    c.Request(stun.MethodRefresh, testturn.Lifetime(time.Minute)),
			"permission": c.Request(stun.MethodCreatePermission, testturn.PeerAddr(peer)),
			"channel":    c.ChannelBind(0x4000, peer),
		} {
			if code := testturn.ErrorCode(resp); code != 437 || !c.Signed(resp) {
				t.Errorf("%s %s without an allocation: %d, want signed 437", network, name, code)
			}
		}
	}
}

// TestAllocationFloodUpToQuota: a flood of allocations stops at the quota
// (486), every descriptor and goroutine it took is given back when the
// allocations end, and a relay range that runs out answers 508.
func TestAllocationFloodUpToQuota(t *testing.T) {
	const quota = 200
	cfg := testConfig()
	cfg.Limits.TotalAllocations = quota
	cfg.Limits.UnauthenticatedRate = 0 // one client host floods on purpose
	// One user from one address: only the total quota is under test.
	cfg.Limits.UserAllocations, cfg.Limits.IPAllocations, cfg.Limits.UserAllocateRate = 0, 0, 0
	srv := start(t, cfg)
	base := srv.settle(t, idleFigures{}, 10*time.Second)

	var clients []*testturn.Client
	for i := 0; i < quota; i++ {
		c := testturn.Dial(t, "udp", srv.UDP, "demo", "demo")
		c.MustAllocate()
		clients = append(clients, c)
	}
	if code := testturn.ErrorCode(testturn.Dial(t, "udp", srv.UDP, "demo", "demo").Allocate()); code != 486 {
		t.Fatalf("allocation past the quota: %d, want 486", code)
	}
	peak := srv.scrape()
	if fds := peak["process_open_fds"]; fds < base.fds+quota {
		t.Fatalf("open fds at the peak %v: the allocations did not hold their sockets", fds)
	}
	for _, c := range clients {
		if code := c.Refresh(0); code != 0 {
			t.Fatalf("release: %d", code)
		}
		c.Close()
	}
	after := srv.settle(t, base, 10*time.Second)
	t.Logf("flood of %d: goroutines %v → %v → %v, open fds %v → %v → %v", quota,
		base.goroutines, peak["go_goroutines"], after.goroutines, base.fds, peak["process_open_fds"], after.fds)
}

// TestRelayPortsRunOut: with every relay port taken an Allocate gets 508
// (not a hang), and a released port is handed out again.
func TestRelayPortsRunOut(t *testing.T) {
	cfg := testConfig()
	cfg.Relay.MinPort, cfg.Relay.MaxPort = 61000, 61003
	srv := start(t, cfg)
	var clients []*testturn.Client
	for i := 0; i < 4; i++ {
		c := testturn.Dial(t, "udp", srv.UDP, "demo", "demo")
		c.MustAllocate()
		clients = append(clients, c)
	}
	if code := testturn.ErrorCode(testturn.Dial(t, "udp", srv.UDP, "demo", "demo").Allocate()); code != 508 {
		t.Fatalf("allocation with no relay port left: %d, want 508", code)
	}
	if got := srv.metric(`turnd_allocations_rejected_total{reason="capacity"}`); got != 1 {
		t.Fatalf("capacity rejections = %v, want 1", got)
	}
	if code := clients[0].Refresh(0); code != 0 {
		t.Fatalf("release: %d", code)
	}
	testturn.Dial(t, "udp", srv.UDP, "demo", "demo").MustAllocate()
}
