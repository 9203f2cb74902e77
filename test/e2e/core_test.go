package e2e

import (
	"fmt"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/turnd/turnd/internal/testturn"

	"github.com/pion/stun/v4"

	"github.com/turnd/turnd/internal/auth"
)

// uclientTimeout bounds each uclient run; the loads below take a few seconds.
const uclientTimeout = 90 * time.Second

// TestUclientZeroLoss runs coturn's own load tester through every client
// transport and relay mode turnd offers; each must relay every message.
func TestUclientZeroLoss(t *testing.T) {
	certFile, keyFile := selfSigned(t)
	cfg := testConfig()
	cfg.Listen.TLS = []string{"127.0.0.1:0"}
	cfg.TLS.CertFile, cfg.TLS.KeyFile = certFile, keyFile
	cfg.Auth.Secrets = []string{"old-secret", "rest-secret"}
	srv := start(t, cfg)
	peer := strconv.Itoa(startPeer(t))

	const m, n = 4, 50
	base := []string{"-e", "127.0.0.1", "-r", peer, "-X", "-m", strconv.Itoa(m), "-n", strconv.Itoa(n), "-l", "120"}
	demo := []string{"-u", "demo", "-w", "demo"}
	cases := []struct {
		name   string
		server string
		args   []string
	}{
		{"udp channels", srv.UDP, demo},
		{"udp send indications", srv.UDP, append([]string{"-s"}, demo...)},
		{"tcp control", srv.TCP, append([]string{"-t"}, demo...)},
		{"tls control", srv.TLS, append([]string{"-t", "-S"}, demo...)},
		{"rest credentials", srv.UDP, []string{"-u", "alice", "-W", "rest-secret"}},
		{"rfc6062 tcp relay", srv.TCP, append([]string{"-T"}, demo...)},
		{"dont fragment", srv.UDP, append([]string{"-g"}, demo...)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := uclient(t, uclientTimeout, tc.server, append(append([]string{}, tc.args...), base...)...)
			requireZeroLoss(t, r, m*n)
		})
	}
	if v := srv.metric(`turnd_allocations_created_total{transport="tls"}`); v == 0 {
		t.Error("TLS allocations were not counted as tls")
	}
	// Every case echoes m*n messages, both ways; the totals trail the truth
	// by less than a tally batch per live allocation, far below m*n here.
	for _, dir := range []string{"to_peer", "from_peer"} {
		if v := srv.metric(`turnd_relayed_packets_total{direction="` + dir + `"}`); v < m*n {
			t.Errorf("relayed packets %s: %v counted, want at least %d", dir, v, m*n)
		}
	}
}

// TestWrongPasswordGets401 checks that bad credentials are refused, by uclient and on the wire.
func TestWrongPasswordGets401(t *testing.T) {
	srv := start(t, testConfig())
	peer := strconv.Itoa(startPeer(t))
	r := uclient(t, uclientTimeout, srv.UDP, "-u", "demo", "-w", "wrong", "-e", "127.0.0.1", "-r", peer, "-X", "-m", "1", "-n", "5")
	if r.exit == 0 {
		t.Fatalf("uclient with a wrong password succeeded:\n%s", tail(r.out))
	}
	c := testturn.Dial(t, "udp", srv.UDP, "demo", "wrong")
	if code := testturn.ErrorCode(c.Allocate()); code != 401 {
		t.Fatalf("wrong password: got %d, want 401", code)
	}
	if got := srv.metric(`turnd_allocations_rejected_total{reason="auth"}`); got < 1 {
		t.Fatalf("auth rejections = %v", got)
	}
}

// TestPeerFilter: a denied peer gets 403 while an allowed one relays.
func TestPeerFilter(t *testing.T) {
	cfg := testConfig()
	cfg.Peers.Denied = []string{"127.0.0.2"}
	srv := start(t, cfg)
	peer := &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: startPeer(t)}

	c := testturn.Dial(t, "udp", srv.UDP, "demo", "demo")
	c.MustAllocate()
	for _, denied := range []string{"169.254.169.254", "127.0.0.2", "224.0.0.1", "0.0.0.0", "::ffff:169.254.169.254"} {
		ip := net.ParseIP(denied)
		if code := c.Permit(&net.UDPAddr{IP: ip, Port: 9}); code != 403 {
			t.Errorf("CreatePermission to %s: got %d, want 403", denied, code)
		}
	}
	// ChannelBind is refused the same way, signed (pion alone would say 401).
	resp := c.ChannelBind(0x4000, &net.UDPAddr{IP: net.ParseIP("169.254.169.254"), Port: 80})
	if code := testturn.ErrorCode(resp); code != 403 || !c.Signed(resp) {
		t.Errorf("ChannelBind to a denied peer: %d (signed %v), want signed 403", code, c.Signed(resp))
	}
	if code := c.Permit(peer); code != 0 {
		t.Fatalf("CreatePermission to allowed peer: error %d", code)
	}
	if !c.Echo(peer, "through the relay") {
		t.Fatal("allowed peer did not echo through the relay")
	}
	if got := srv.metric(`turnd_permissions_rejected_total{reason="peer_denied"}`); got < 6 {
		t.Fatalf("peer_denied = %v", got)
	}
}

// TestLoopbackPeersDeniedByDefault: without allow_loopback a loopback peer is refused.
func TestLoopbackPeersDeniedByDefault(t *testing.T) {
	cfg := testConfig()
	cfg.Peers.AllowLoopback = false
	cfg.Peers.Allowed = []string{"127.0.0.0/8"} // the allowed list does not open loopback
	srv := start(t, cfg)
	c := testturn.Dial(t, "udp", srv.UDP, "demo", "demo")
	c.MustAllocate()
	if code := c.Permit(&net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 9}); code != 403 {
		t.Fatalf("loopback peer: got %d, want 403", code)
	}
}

// TestQuotas: the per-user and total quotas answer 486.
func TestQuotas(t *testing.T) {
	cfg := testConfig()
	cfg.Auth.Users["other"] = "other"
	cfg.Auth.Users["third"] = "third"
	cfg.Limits.UserAllocations = 1
	cfg.Limits.TotalAllocations = 2
	srv := start(t, cfg)

	testturn.Dial(t, "udp", srv.UDP, "demo", "demo").MustAllocate()
	if code := testturn.ErrorCode(testturn.Dial(t, "udp", srv.UDP, "demo", "demo").Allocate()); code != 486 {
		t.Fatalf("second allocation of one user: got %d, want 486", code)
	}
	testturn.Dial(t, "udp", srv.UDP, "other", "other").MustAllocate()
	c := testturn.Dial(t, "udp", srv.UDP, "third", "third")
	resp := c.Allocate()
	if code := testturn.ErrorCode(resp); code != 486 {
		t.Fatalf("allocation past the total quota: got %d, want 486", code)
	}
	if !c.Signed(resp) {
		t.Fatal("486 is not signed with the client's key")
	}
	if got := srv.metric(`turnd_allocations_rejected_total{reason="quota"}`); got != 2 {
		t.Fatalf("quota rejections = %v, want 2", got)
	}
}

// TestRESTCredentials: every configured secret works; expired usernames are refused.
func TestRESTCredentials(t *testing.T) {
	cfg := testConfig()
	cfg.Auth.Secrets = []string{"current", "previous"}
	srv := start(t, cfg)
	rest := func(expiry time.Time, secret string) *testturn.Client {
		user := fmt.Sprintf("%d:alice", expiry.Unix())
		return testturn.Dial(t, "udp", srv.UDP, user, auth.RESTPassword(secret, user))
	}
	future := time.Now().Add(time.Hour)
	for _, secret := range []string{"current", "previous"} {
		c := rest(future, secret)
		resp := c.Allocate()
		if code := testturn.ErrorCode(resp); code != 0 {
			t.Fatalf("secret %q: error %d", secret, code)
		}
		if !c.Signed(resp) {
			t.Fatalf("secret %q: response not signed with the client's key", secret)
		}
	}
	if code := testturn.ErrorCode(rest(time.Now().Add(-time.Minute), "current").Allocate()); code != 401 {
		t.Fatalf("expired REST username: got %d, want 401", code)
	}
	if code := testturn.ErrorCode(rest(future, "unknown-secret").Allocate()); code != 401 {
		t.Fatalf("unknown secret: got %d, want 401", code)
	}
}

// TestTCPAllocationsCanBeSwitchedOff: RFC 6062 allocations get 442.
func TestTCPAllocationsCanBeSwitchedOff(t *testing.T) {
	cfg := testConfig()
	cfg.Relay.TCPAllocations = false
	srv := start(t, cfg)
	c := testturn.Dial(t, "tcp", srv.TCP, "demo", "demo")
	resp := c.Request(stun.MethodAllocate, testturn.RawAttr(stun.AttrRequestedTransport, []byte{6, 0, 0, 0}))
	if code := testturn.ErrorCode(resp); code != 442 {
		t.Fatalf("TCP allocation: got %d, want 442", code)
	}
	if !c.Signed(resp) {
		t.Fatal("442 is not signed")
	}
}

// TestLifetimeCappedAndBindingAnswered checks max_lifetime and STUN Binding.
// With the default cap (1h) a client asking for more gets exactly an hour
// (RFC 8656 §7.2: the maximum is granted as such).
func TestLifetimeCappedAndBindingAnswered(t *testing.T) {
	cfg := testConfig()
	cfg.Limits.MaxLifetime = 5 * time.Minute
	srv := start(t, cfg)
	c := testturn.Dial(t, "udp", srv.UDP, "demo", "demo")
	resp := c.Allocate(testturn.Lifetime(50 * time.Minute))
	if got := testturn.LifetimeOf(t, resp); got != 5*time.Minute {
		t.Fatalf("granted lifetime %v, want 5m", got)
	}
	d := testturn.Dial(t, "udp", start(t, testConfig()).UDP, "demo", "demo")
	if got := testturn.LifetimeOf(t, d.Allocate(testturn.Lifetime(2*time.Hour))); got != time.Hour {
		t.Fatalf("default cap: granted %v for 2h, want 1h", got)
	}
	if got := c.BindingMapped(); got == nil || !got.IP.Equal(net.IPv4(127, 0, 0, 1)) {
		t.Fatalf("binding: mapped address %v", got)
	}
}
