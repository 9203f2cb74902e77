package e2e

import (
	"net"
	"slices"
	"strconv"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/turnd/turnd/internal/testturn"
)

// TestUpgradeMovesEveryUDPSocket: with an IPv4 and an IPv6 UDP address of
// four SO_REUSEPORT sockets each, clients spread over every socket keep
// their allocations, nonces and relays across the upgrade, and the new
// process serves the very addresses the old one did.
func TestUpgradeMovesEveryUDPSocket(t *testing.T) {
	cfg := upgradeConfig(t)
	_, port, _ := net.SplitHostPort(cfg.Listen.UDP[0])
	cfg.Listen.UDP = append(cfg.Listen.UDP, net.JoinHostPort("::1", port))
	cfg.Listen.UDPSockets = 4
	l := startUpgradable(t, writeConfig(t, cfg))
	before := l.log.allLogs("turnd serving")[0]["udp"]
	peer := echoPeer(t)
	var clients []*testturn.Client
	for i := range 16 {
		server := cfg.Listen.UDP[i%2]
		c := testturn.Dial(t, "udp", server, "demo", "demo")
		relayed(t, c, peer)
		clients = append(clients, c)
	}

	old := l.serving()
	from := l.log.logCount()
	next := l.upgrade()
	l.handedOver(0, next, len(clients), 0)
	old.waitGone(t, 10*time.Second, l.log)
	for _, addr := range cfg.Listen.UDP {
		if n := socketsHeld(t, "udp", addr, next); n != cfg.Listen.UDPSockets {
			t.Errorf("the new process holds %d sockets on %s, want the group's %d", n, addr, cfg.Listen.UDPSockets)
		}
	}
	after, _ := l.log.waitLogFrom(from, "turnd serving", 5*time.Second)
	if !slices.Equal(toStrings(after["udp"]), toStrings(before)) {
		t.Errorf("the new process serves udp %v, the old one served %v", after["udp"], before)
	}
	for i, c := range clients {
		if code := c.Refresh(10 * time.Minute); code != 0 {
			t.Errorf("client %d (%v): refresh on the new process: error %d", i, c.LocalAddr(), code)
		}
		if !c.Echo(peer, "after the upgrade "+strconv.Itoa(i)) {
			t.Errorf("client %d (%v): no echo after the upgrade", i, c.LocalAddr())
		}
	}
}

// toStrings is a log line's list of strings.
func toStrings(v any) []string {
	var out []string
	xs, _ := v.([]any)
	for _, x := range xs {
		s, _ := x.(string)
		out = append(out, s)
	}
	return out
}

// TestUpgradeAfterWait: with handover.after: wait, the old process that
// has handed everything over stays up (as a Kubernetes container must,
// lest it be restarted) until SIGTERM, then exits 0.
func TestUpgradeAfterWait(t *testing.T) {
	cfg := upgradeConfig(t)
	cfg.Handover.After = "wait"
	l := startUpgradable(t, writeConfig(t, cfg))
	old := l.serving()
	next := l.upgrade()
	l.handedOver(0, next, 0, 0)
	l.log.waitLog("waiting for SIGTERM", 5*time.Second)
	if old.exited() {
		t.Fatal("the old turnd exited with handover.after: wait")
	}
	relayed(t, testturn.Dial(t, "udp", l.log.UDP, "demo", "demo"), echoPeer(t))
	if err := unix.PidfdSendSignal(old.fd, unix.SIGTERM, nil, 0); err != nil {
		t.Fatal(err)
	}
	if code := old.waitGone(t, 5*time.Second, l.log); code != 0 {
		t.Errorf("the waiting old turnd exited %d on SIGTERM, want 0", code)
	}
	if next.exited() {
		t.Fatal("the new turnd exited with the old one")
	}
}
