package e2e

import (
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/turnd/turnd/internal/testturn"
)

// TestTakeOverFlag: `turnd serve --take-over` started by a supervisor on
// the config of a running turnd takes over through handover.socket, its
// allocation relaying on with nothing lost (and a third process takes over
// from it the same way); with nobody serving the socket (none there, or one
// left by a dead process) it starts fresh, and serves the socket itself.
func TestTakeOverFlag(t *testing.T) {
	t.Run("from a running turnd", func(t *testing.T) {
		cfg := testConfig() // port 0: the successor must serve the sockets it inherits, not bind new ones
		cfg.Handover.Socket = filepath.Join(t.TempDir(), "handover.sock")
		path := writeConfig(t, cfg)
		a := startUpgradable(t, path)
		peer := newCountingPeer(t)
		c, tap, _ := pionDial(t, "udp", a.log.UDP, nil)
		s, _, relay := relayStream(t, c, peer)
		s.waitEchoes(t, streamRate/2, 10*time.Second)
		mark := tap.received()

		b := takeOver(t, path, a, 1)
		s.waitEchoes(t, s.echoed()+streamRate/2, 10*time.Second)
		requireOwner(t, "the relayed socket", "udp", relay.String(), "", b.serving(), a.serving(), b.serving())
		requireOwner(t, "the UDP listener", "udp", a.log.UDP, "", b.serving(), a.serving(), b.serving())

		c3 := takeOver(t, path, b, 1)
		s.waitEchoes(t, s.echoed()+streamRate/2, 10*time.Second)
		requireOwner(t, "the relayed socket", "udp", relay.String(), "", c3.serving(), b.serving(), c3.serving())
		refresh(t, c, tap, refreshTo)
		s.finish(t).requirePerfect(t, "UDP stream across two take-overs")
		if errs := tap.errorsSince(mark); len(errs) > 0 {
			t.Errorf("error responses after the take-over: %v", errs)
		}
		relayed(t, testturn.Dial(t, "udp", a.log.UDP, "demo", "demo"), peer.addr())
	})

	t.Run("nobody serving", func(t *testing.T) {
		for _, stale := range []bool{false, true} {
			name := "no socket"
			if stale {
				name = "a socket left by a dead process"
			}
			t.Run(name, func(t *testing.T) {
				cfg := upgradeConfig(t)
				cfg.Handover.Socket = filepath.Join(t.TempDir(), "handover.sock")
				if stale {
					ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: cfg.Handover.Socket, Net: "unix"})
					if err != nil {
						t.Fatal(err)
					}
					ln.SetUnlinkOnClose(false) // as a killed turnd leaves it
					ln.Close()
					if _, err := os.Stat(cfg.Handover.Socket); err != nil {
						t.Fatalf("the stale socket is not there: %v", err)
					}
				}
				path := writeConfig(t, cfg)
				fresh := launchLineage(t, turndBin, path, "serve", "--take-over")
				fresh.awaitServing()
				if fresh.log.hasLog("took over") {
					t.Errorf("a turnd with nobody to take over from logged \"took over\"")
				}
				relayed(t, testturn.Dial(t, "udp", fresh.log.UDP, "demo", "demo"), echoPeer(t))
				// It serves the socket now: the next one takes over from it.
				takeOver(t, path, fresh, 1)
			})
		}
	})
}

// takeOver starts `turnd serve --take-over` on path, waits until it has
// taken over from old's serving process (moved allocations) and that one
// has exited 0, and returns the new lineage.
func takeOver(t *testing.T, path string, old *lineage, moved int) *lineage {
	t.Helper()
	from := old.log.logCount()
	l := launchLineage(t, turndBin, path, "serve", "--take-over")
	took := l.log.waitLog("took over", 15*time.Second)
	handed, _ := old.log.waitLogFrom(from, "handed over", 10*time.Second)
	if handed["successor"] != float64(l.serving().pid) || handed["allocations_moved"] != float64(moved) ||
		took["allocations"] != float64(moved) {
		t.Errorf("handed over %v, took over %v; want %d allocations to %d", handed, took, moved, l.serving().pid)
	}
	if code := old.serving().waitGone(t, 10*time.Second, old.log); code != 0 && code != -1 {
		t.Errorf("the turnd taken over from exited %d, want 0", code)
	}
	return l
}
