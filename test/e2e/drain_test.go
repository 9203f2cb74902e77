package e2e

import (
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/turnd/turnd/internal/testturn"

	"github.com/pion/stun/v4"

	"github.com/turnd/turnd/internal/auth"
)

// drainSignalled sends SIGTERM and checks the first moments of the drain:
// the log line within 100 ms, readiness failing, liveness still fine.
func drainSignalled(t *testing.T, srv *turnd, sig syscall.Signal) {
	t.Helper()
	drainSignalledWithin(t, srv, sig, 100*time.Millisecond)
}

// drainSignalledWithin is drainSignalled with the log line due within bound.
func drainSignalledWithin(t *testing.T, srv *turnd, sig syscall.Signal, bound time.Duration) {
	t.Helper()
	sent := time.Now()
	srv.signal(sig)
	line := srv.waitLog("drain started", 5*time.Second)
	if d := logTime(t, line).Sub(sent); d > bound {
		t.Errorf("drain started %v after the signal, want < %v", d, bound)
	}
	if code, body := srv.get("/readyz"); code != 503 || !strings.Contains(body, "draining") {
		t.Errorf("/readyz during drain: %d %q, want 503 draining", code, body)
	}
	if code, _ := srv.get("/healthz"); code != 200 {
		t.Errorf("/healthz during drain: %d, want 200", code)
	}
}

// TestDrainKeepsLiveRelaysAndExitsWhenTheyEnd is the product in one test:
// uclient traffic over UDP and TCP keeps flowing through a SIGTERM with 0 %
// loss, new allocations get 486, and once the TCP clients have released
// (over UDP uclient never releases its probe allocation, which only
// expires) a second SIGTERM stops turnd at once.
func TestDrainKeepsLiveRelaysAndExitsWhenTheyEnd(t *testing.T) {
	srv := start(t, testConfig())
	peer := strconv.Itoa(startPeer(t))
	if code, _ := srv.get("/readyz"); code != 200 {
		t.Fatalf("/readyz before drain: %d", code)
	}

	const m, n = 4, 150 // 150 messages 20 ms apart: 3 s of traffic per client
	args := []string{"-u", "demo", "-w", "demo", "-e", "127.0.0.1", "-r", peer, "-X", "-m", strconv.Itoa(m),
		"-n", strconv.Itoa(n), "-z", "20", "-l", "100"}
	var runs []*uclientRun
	for _, extra := range [][]string{nil, {"-t"}} {
		server := srv.UDP
		if extra != nil {
			server = srv.TCP
		}
		runs = append(runs, startUclient(t, uclientTimeout, server, append(append([]string{}, extra...), args...)...))
	}
	// Both runs have allocated and bound, and traffic flows.
	for _, r := range runs {
		select {
		case <-r.sending:
		case res := <-r.done:
			t.Fatalf("uclient ended before sending: %v\n%s", res.err, tail(res.out))
		}
	}
	drainSignalled(t, srv, syscall.SIGTERM)

	fresh := testturn.Dial(t, "udp", srv.UDP, "demo", "demo")
	resp := fresh.Allocate()
	if code := testturn.ErrorCode(resp); code != 486 || !fresh.Signed(resp) {
		t.Fatalf("new Allocate while draining: %d (signed %v), want signed 486", code, fresh.Signed(resp))
	}
	if got := srv.metric("turnd_draining"); got != 1 {
		t.Errorf("turnd_draining = %v", got)
	}
	if got := srv.metric("turnd_drain_deadline_timestamp_seconds"); got < float64(time.Now().Unix()) {
		t.Errorf("drain deadline %v is not in the future", got)
	}
	if got := srv.metric(`turnd_allocations_rejected_total{reason="draining"}`); got != 1 {
		t.Errorf("draining rejections = %v, want 1", got)
	}
	if st := srv.status(); st["state"] != "draining" || st["drain"] == nil {
		t.Errorf("/status during drain: %v", st)
	}

	for _, r := range runs {
		res := r.wait()
		if res.err != nil {
			t.Fatal(res.err)
		}
		requireZeroLoss(t, res, m*n)
	}
	if srv.exited() {
		t.Fatal("turnd exited while UDP probe allocations were still live")
	}
	srv.signal(syscall.SIGTERM) // the second one: stop now
	if code := srv.waitExit(5 * time.Second); code != 0 {
		t.Fatalf("exit code %d", code)
	}
	line := srv.waitLog("drain complete", time.Second)
	if line["reason"] != "immediate" {
		t.Fatalf("drain complete: %v", line)
	}
}

// TestDrainExitsWhenLastTCPClientReleases: uclient over TCP releases every
// allocation when it ends, and turnd exits by itself right after.
func TestDrainExitsWhenLastTCPClientReleases(t *testing.T) {
	srv := start(t, testConfig())
	peer := strconv.Itoa(startPeer(t))
	const m, n = 2, 100
	run := startUclient(t, uclientTimeout, srv.TCP, "-t", "-u", "demo", "-w", "demo", "-e", "127.0.0.1", "-r", peer,
		"-X", "-m", strconv.Itoa(m), "-n", strconv.Itoa(n), "-z", "20", "-l", "100")
	// The probe allocation comes and goes first; the clients' allocations
	// are live once their data flows.
	select {
	case <-run.sending:
	case res := <-run.done:
		t.Fatalf("uclient ended before sending: %v\n%s", res.err, tail(res.out))
	}
	drainSignalled(t, srv, syscall.SIGTERM)
	r := run.wait()
	if r.err != nil {
		t.Fatal(r.err)
	}
	finished := time.Now()
	requireZeroLoss(t, r, m*n)
	if code := srv.waitExit(5 * time.Second); code != 0 {
		t.Fatalf("exit code %d", code)
	}
	line := srv.waitLog("drain complete", time.Second)
	if line["reason"] != "drained" {
		t.Fatalf("drain complete: %v", line)
	}
	if d := logTime(t, line).Sub(finished); d > time.Second {
		t.Errorf("turnd exited %v after the last client ended", d)
	}
}

// TestDrainDeadline: a client that keeps refreshing holds the drain until
// drain.timeout, then turnd closes it and exits 0 — not before.
func TestDrainDeadline(t *testing.T) {
	cfg := testConfig()
	cfg.Drain.Timeout = 2 * time.Second
	srv := start(t, cfg)
	c := testturn.Dial(t, "tcp", srv.TCP, "demo", "demo")
	c.MustAllocate()

	sent := time.Now()
	drainSignalled(t, srv, syscall.SIGTERM)
	// Keep the allocation busy: refreshes must keep working during the drain.
	for i := 0; i < 4; i++ {
		if code := c.Refresh(10 * time.Minute); code != 0 {
			t.Fatalf("refresh during drain: error %d", code)
		}
		if srv.exited() {
			t.Fatalf("turnd exited %v into a 2s drain", time.Since(sent))
		}
	}
	srv.waitExit(10 * time.Second)
	elapsed := time.Since(sent)
	if elapsed < 2*time.Second || elapsed > 4*time.Second {
		t.Errorf("exited %v after SIGTERM, want about 2s", elapsed)
	}
	line := srv.waitLog("drain deadline passed", time.Second)
	if line["allocations"] != float64(1) {
		t.Errorf("deadline line: %v", line)
	}
	if done := srv.waitLog("drain complete", time.Second); done["reason"] != "deadline" {
		t.Errorf("drain complete: %v", done)
	}
}

// TestIdleSignals: an idle server exits at once on SIGTERM, SIGUSR1 and the first SIGINT.
func TestIdleSignals(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGUSR1, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			srv := start(t, testConfig())
			sent := time.Now()
			srv.signal(sig)
			if code := srv.waitExit(5 * time.Second); code != 0 {
				t.Fatalf("exit code %d", code)
			}
			if d := time.Since(sent); d > time.Second {
				t.Errorf("idle server took %v to exit", d)
			}
			if line := srv.waitLog("drain complete", time.Second); line["reason"] != "drained" {
				t.Errorf("drain complete: %v", line)
			}
		})
	}
}

// TestSecondSignalStopsAtOnce: SIGTERM twice, or SIGQUIT, with live allocations.
func TestSecondSignalStopsAtOnce(t *testing.T) {
	for name, sigs := range map[string][]syscall.Signal{
		"sigterm twice": {syscall.SIGTERM, syscall.SIGTERM},
		"sigint twice":  {syscall.SIGINT, syscall.SIGINT},
		"sigquit":       {syscall.SIGQUIT},
	} {
		t.Run(name, func(t *testing.T) {
			srv := start(t, testConfig())
			testturn.Dial(t, "udp", srv.UDP, "demo", "demo").MustAllocate()
			if len(sigs) == 2 {
				drainSignalled(t, srv, sigs[0])
			}
			srv.signal(sigs[len(sigs)-1])
			if code := srv.waitExit(5 * time.Second); code != 0 {
				t.Fatalf("exit code %d", code)
			}
			if line := srv.waitLog("drain complete", time.Second); line["reason"] != "immediate" || line["force_closed"] != float64(1) {
				t.Errorf("drain complete: %v", line)
			}
		})
	}
}

// TestDrainRedirectsToAlternates: with alternate servers, new Allocates get
// 300 Try Alternate with ALTERNATE-SERVER, in rotation: unsigned and without
// a NONCE to a fresh client's first leg (so it starts afresh at the
// alternate), signed to a client that already holds this server's nonce.
func TestDrainRedirectsToAlternates(t *testing.T) {
	cfg := testConfig()
	cfg.Drain.AlternateServers = []string{"127.0.0.1:13478", "127.0.0.1:23478"}
	srv := start(t, cfg)
	holder := testturn.Dial(t, "udp", srv.UDP, "demo", "demo")
	holder.MustAllocate()
	known := testturn.Dial(t, "udp", srv.UDP, "demo", "demo")
	if code := known.Refresh(time.Minute); code != 437 { // only to learn a nonce
		t.Fatalf("refresh without an allocation: %d, want 437", code)
	}
	drainSignalled(t, srv, syscall.SIGTERM)
	for i, want := range []int{13478, 23478, 13478} {
		c, signed := testturn.Dial(t, "udp", srv.UDP, "demo", "demo"), false
		if i == 2 {
			c, signed = known, true
		}
		resp := c.Allocate()
		var alt stun.AlternateServer
		if code := testturn.ErrorCode(resp); code != 300 || alt.GetFrom(resp) != nil {
			t.Fatalf("got %d, want 300 with ALTERNATE-SERVER", code)
		}
		if alt.Port != want || !alt.IP.Equal(net.IPv4(127, 0, 0, 1)) || c.Signed(resp) != signed {
			t.Fatalf("alternate %v:%d signed=%v, want 127.0.0.1:%d signed=%v", alt.IP, alt.Port, c.Signed(resp), want, signed)
		}
		if resp.Contains(stun.AttrNonce) {
			t.Errorf("300 %d carries a NONCE", i)
		}
	}
	// The live allocation is untouched.
	if code := holder.Refresh(time.Minute); code != 0 {
		t.Fatalf("refresh of the live allocation: %d", code)
	}
	if got := srv.metric(`turnd_allocations_rejected_total{reason="redirected"}`); got != 3 {
		t.Errorf("redirected = %v, want 3", got)
	}
}

// TestLameDuckDelay: during drain.delay readiness fails but allocations are
// still accepted; after it they get 486.
func TestLameDuckDelay(t *testing.T) {
	cfg := testConfig()
	cfg.Drain.Delay = 1500 * time.Millisecond
	srv := start(t, cfg)
	holder := testturn.Dial(t, "udp", srv.UDP, "demo", "demo")
	holder.MustAllocate()
	drainSignalled(t, srv, syscall.SIGTERM)
	testturn.Dial(t, "udp", srv.UDP, "demo", "demo").MustAllocate()
	srv.waitLog("drain: refusing new allocations", 5*time.Second)
	if code := testturn.ErrorCode(testturn.Dial(t, "udp", srv.UDP, "demo", "demo").Allocate()); code != 486 {
		t.Fatalf("after the delay: got %d, want 486", code)
	}
}

// TestReload: SIGHUP swaps credentials for new clients while old allocations
// keep relaying; a broken file changes nothing.
func TestReload(t *testing.T) {
	cfg := testConfig()
	cfg.Auth.Secrets = []string{"first"}
	path := writeConfig(t, cfg)
	srv := startTurndFile(t, path)
	peer := &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: startPeer(t)}

	old := restClient(t, srv, "first")
	old.MustAllocate()
	if code := old.Permit(peer); code != 0 {
		t.Fatalf("permission: %d", code)
	}

	cfg.Auth.Secrets = []string{"second"}
	cfg.Listen.UDP = []string{"127.0.0.1:1"} // cannot change at runtime: logged, kept
	rewriteConfig(t, path, cfg)
	srv.signal(syscall.SIGHUP)
	srv.waitLog("reloaded", 5*time.Second)
	if !srv.hasLog("need a restart") {
		t.Error("a changed listener was not reported as needing a restart")
	}
	restClient(t, srv, "second").MustAllocate()
	if code := testturn.ErrorCode(restClient(t, srv, "first").Allocate()); code != 401 {
		t.Fatalf("removed secret: got %d, want 401", code)
	}
	if !old.Echo(peer, "still relaying") {
		t.Fatal("the old allocation stopped relaying after reload")
	}

	// SIGUSR2 (coturn's certificate reload, sent by renewal hooks) reloads too.
	cfg.Auth.Secrets = []string{"second", "third"}
	rewriteConfig(t, path, cfg)
	srv.signal(syscall.SIGUSR2)
	srv.waitLogCount("reloaded", 2, 5*time.Second)
	restClient(t, srv, "third").MustAllocate()

	if err := os.WriteFile(path, []byte("realm: [broken\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	srv.signal(syscall.SIGHUP)
	srv.waitLog("reload refused", 5*time.Second)
	if got := srv.metric("turnd_config_last_reload_successful"); got != 0 {
		t.Errorf("turnd_config_last_reload_successful = %v after a broken file", got)
	}
	restClient(t, srv, "second").MustAllocate()
}

func restClient(t *testing.T, srv *turnd, secret string) *testturn.Client {
	user := strconv.FormatInt(time.Now().Add(time.Hour).Unix(), 10) + ":bob"
	return testturn.Dial(t, "udp", srv.UDP, user, auth.RESTPassword(secret, user))
}

// TestDrainKeepsTLSRelays: a turns: client's allocation keeps refreshing,
// permitting and relaying through a drain; a new one is refused; turnd
// exits when the client leaves.
func TestDrainKeepsTLSRelays(t *testing.T) {
	cfg := testConfig()
	clientTLS := withTLS(t, &cfg)
	srv := start(t, cfg)
	peer := &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: startPeer(t)}
	c := testturn.DialTLS(t, srv.TLS, clientTLS, "demo", "demo")
	c.MustAllocate()
	drainSignalled(t, srv, syscall.SIGTERM)
	if code := c.Refresh(10 * time.Minute); code != 0 {
		t.Fatalf("refresh during drain: %d", code)
	}
	if code := c.Permit(peer); code != 0 {
		t.Fatalf("permission during drain: %d", code)
	}
	if !c.Echo(peer, "over tls while draining") {
		t.Fatal("no relay over TLS during the drain")
	}
	if code := testturn.ErrorCode(testturn.DialTLS(t, srv.TLS, clientTLS, "demo", "demo").Allocate()); code != 486 {
		t.Fatalf("new TLS allocation while draining: %d, want 486", code)
	}
	c.Close()
	if code := srv.waitExit(5 * time.Second); code != 0 {
		t.Fatalf("exit code %d", code)
	}
	if line := srv.waitLog("drain complete", time.Second); line["reason"] != "drained" {
		t.Fatalf("drain complete: %v", line)
	}
}

// TestDrainTimeoutZeroStopsAtOnce: drain.timeout 0 means no graceful period.
func TestDrainTimeoutZeroStopsAtOnce(t *testing.T) {
	cfg := testConfig()
	cfg.Drain.Timeout = 0
	srv := start(t, cfg)
	testturn.Dial(t, "udp", srv.UDP, "demo", "demo").MustAllocate()
	sent := time.Now()
	srv.signal(syscall.SIGTERM)
	if code := srv.waitExit(5 * time.Second); code != 0 {
		t.Fatalf("exit code %d", code)
	}
	if d := time.Since(sent); d > time.Second {
		t.Fatalf("took %v to stop with no graceful period", d)
	}
	if line := srv.waitLog("drain complete", time.Second); line["reason"] != "immediate" || line["force_closed"] != float64(1) {
		t.Fatalf("drain complete: %v", line)
	}
}
