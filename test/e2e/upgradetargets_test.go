package e2e

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pion/stun/v4"
	"golang.org/x/sys/unix"

	"github.com/turnd/turnd/internal/testturn"
)

// TestUpgradeTargets: `turnd upgrade` finds the process by its pidfile and
// by its config's handover.socket as well as by PID, and the pidfile names
// each successor once it serves; a draining turnd refuses to upgrade and
// drains on. One UDP allocation relays throughout.
func TestUpgradeTargets(t *testing.T) {
	dir := t.TempDir()
	cfg := upgradeConfig(t)
	cfg.PIDFile = filepath.Join(dir, "turnd.pid")
	cfg.Handover.Socket = filepath.Join(dir, "handover.sock")
	path := writeConfig(t, cfg)
	l := startUpgradable(t, path)
	peer := echoPeer(t)
	c := testturn.Dial(t, "udp", l.log.UDP, "demo", "demo")
	relayed(t, c, peer)

	for _, args := range [][]string{{"--pidfile", cfg.PIDFile}, {"--config", path}} {
		old := l.serving()
		from := l.log.logCount()
		next := l.upgradeWith(args...)
		l.handedOver(from, next, 1, 0)
		old.waitGone(t, 10*time.Second, l.log)
		pidfileHolds(t, cfg.PIDFile, next.pid) // the old one, exiting, left it alone
		if !c.Echo(peer, "after turnd upgrade "+strings.Join(args, " ")) {
			t.Fatalf("the allocation stopped relaying after turnd upgrade %v", args)
		}
	}

	draining := l.serving()
	from := l.log.logCount()
	if err := unix.PidfdSendSignal(draining.fd, unix.SIGTERM, nil, 0); err != nil {
		t.Fatal(err)
	}
	l.log.waitLogFrom(from, "drain started", 5*time.Second)
	out := runUpgrade(t, "--pid", strconv.Itoa(draining.pid))
	t.Logf("upgrade of a draining turnd: exit %d; stderr: %s", out.code, strings.TrimSpace(out.stderr))
	if out.code == 0 || strings.TrimSpace(out.stderr) == "" {
		t.Errorf("turnd upgrade of a draining turnd: exit %d, stderr %q; want non-zero with the reason\n%s",
			out.code, out.stderr, out.stdout)
	}
	if draining.exited() || l.log.countLogFrom(from, "handed over") != 0 {
		t.Fatal("the draining turnd handed over or exited")
	}
	if !c.Echo(peer, "draining on") {
		t.Fatal("the allocation stopped relaying in the drain")
	}
}

// TestUpgradeKeepsReservations: an EVEN-PORT reservation made before the
// upgrade is honoured by the new process: another client's Allocate with
// its RESERVATION-TOKEN gets the held port P+1, and the allocation that
// reserved it relays on from P.
func TestUpgradeKeepsReservations(t *testing.T) {
	l := startUpgradable(t, writeConfig(t, upgradeConfig(t)))
	peer := echoPeer(t)
	first := testturn.Dial(t, "udp", l.log.UDP, "demo", "demo")
	resp := first.Allocate(testturn.RawAttr(stun.AttrEvenPort, []byte{0x80}))
	if code := testturn.ErrorCode(resp); code != 0 {
		t.Fatalf("allocate with EVEN-PORT R=1: %d", code)
	}
	even := testturn.Relayed(t, resp)
	token, err := resp.Get(stun.AttrReservationToken)
	if err != nil || even.Port%2 != 0 {
		t.Fatalf("relayed %v with token %x (%v): want an even port and a token", even, token, err)
	}

	old := l.serving()
	next := l.upgrade()
	l.handedOver(0, next, 1, 0)
	old.waitGone(t, 10*time.Second, l.log)
	// The new process holds P+1 itself: nobody else may take it meanwhile.
	held := net.JoinHostPort(even.IP.String(), strconv.Itoa(even.Port+1))
	requireOwner(t, "the held port", "udp", held, "", next, old, next)

	second := testturn.Dial(t, "udp", l.log.UDP, "demo", "demo")
	resp = second.Allocate(testturn.RawAttr(stun.AttrReservationToken, token))
	if code := testturn.ErrorCode(resp); code != 0 {
		t.Fatalf("allocate with the reservation token on the new process: %d", code)
	}
	if got := testturn.Relayed(t, resp); got.Port != even.Port+1 || !got.IP.Equal(even.IP) {
		t.Fatalf("the token got %v, want the held %v:%d", got, even.IP, even.Port+1)
	}
	if code := first.Permit(peer); code != 0 || !first.Echo(peer, "from the even port") {
		t.Fatalf("the reserving allocation on %v: permission %d, or no echo", even, code)
	}
}

// TestConcurrentUpgrades: two `turnd upgrade` at once on one turnd that
// stays up afterwards (a TLS client holds it): one hands over, the other
// is refused with a reason and no second successor is left running (the
// lineage's cleanup would see it write the log); both clients relay on.
func TestConcurrentUpgrades(t *testing.T) {
	cfg := upgradeConfig(t)
	clientTLS := withFixedTLS(t, &cfg)
	l := startUpgradable(t, writeConfig(t, cfg))
	peer := echoPeer(t)
	c := testturn.Dial(t, "udp", l.log.UDP, "demo", "demo")
	relayed(t, c, peer)
	held := testturn.DialTLS(t, l.log.TLS, clientTLS, "demo", "demo")
	relayed(t, held, peer)
	old := l.serving()
	outs := make(chan upgradeRun, 2)
	for range 2 {
		go func() { outs <- runUpgradeQuiet(strconv.Itoa(old.pid)) }()
	}
	var won []upgradeRun
	for range 2 {
		out := <-outs
		t.Logf("exit %d after %v; stdout %q; stderr %q", out.code, out.took.Round(time.Millisecond),
			strings.TrimSpace(out.stdout), strings.TrimSpace(out.stderr))
		switch {
		case out.code == 0:
			won = append(won, out)
		case strings.TrimSpace(out.stderr) == "":
			t.Errorf("a refused upgrade said no reason")
		}
	}
	if len(won) != 1 {
		t.Fatalf("%d of 2 concurrent upgrades succeeded, want 1", len(won))
	}
	pid, err := lastLinePID(won[0].stdout)
	if err != nil {
		t.Fatal(err)
	}
	next := l.adopt(pid)
	l.handedOver(0, next, 1, 1)
	if n := l.log.countLogFrom(0, "handed over"); n != 1 {
		t.Errorf("%d hand-overs logged, want 1", n)
	}
	if !c.Echo(peer, "after two upgrades at once") || !held.Echo(peer, "in the old process") {
		t.Fatal("a client stopped relaying")
	}
	requireOwner(t, "the UDP listener", "udp", l.log.UDP, "", next, old, next)
}

// runUpgradeQuiet is runUpgrade for another goroutine: it reports a run
// that could not be made as exit -1.
func runUpgradeQuiet(pid string) upgradeRun {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, turndBin, "upgrade", "--pid", pid)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	began := time.Now()
	err := cmd.Run()
	out := upgradeRun{stdout: stdout.String(), stderr: stderr.String(), took: time.Since(began)}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		out.code = ee.ExitCode()
	case err != nil:
		out.code, out.stderr = -1, err.Error()
	}
	return out
}
