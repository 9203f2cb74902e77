package e2e

import (
	"syscall"
	"testing"
	"time"

	"github.com/turnd/turnd/internal/testturn"
)

// TestBrokenLogPipeKeepsRelaying: turnd's stderr is a pipe whose reader goes
// away (a log collector that died). The Go runtime would kill turnd with
// SIGPIPE on its next log line; turnd ignores SIGPIPE, so the lines are lost
// and relaying goes on. Debug logging makes every request below write to
// the broken pipe.
func TestBrokenLogPipeKeepsRelaying(t *testing.T) {
	srv, stderr := launch(t, writeConfig(t, testConfig()), launchOptions{})
	peer := echoPeer(t)
	if err := stderr.Close(); err != nil {
		t.Fatal(err)
	}

	for _, network := range []string{"udp", "tcp"} {
		addr := srv.UDP
		if network == "tcp" {
			addr = srv.TCP
		}
		c := testturn.Dial(t, network, addr, "demo", "demo")
		c.MustAllocate()
		if code := c.Permit(peer); code != 0 {
			t.Fatalf("%s: CreatePermission: error %d", network, code)
		}
		if !c.Echo(peer, "log is gone, relay is not") {
			t.Fatalf("%s: no echo through the relay after the log pipe broke", network)
		}
		if code := c.Refresh(0); code != 0 {
			t.Fatalf("%s: release: error %d", network, code)
		}
	}
	if srv.exited() {
		t.Fatalf("turnd exited after its log pipe broke: %v", srv.err)
	}
	if got := srv.metric(`turnd_allocations_created_total{transport="tcp"}`); got != 1 {
		t.Errorf("tcp allocations created = %v, want 1", got)
	}
	// It still stops cleanly when asked: exit 0, not death by a signal.
	srv.signal(syscall.SIGQUIT)
	if sig := srv.killedBy(5 * time.Second); sig != 0 {
		t.Fatalf("turnd died of %v", sig)
	}
	if code := srv.waitExit(time.Second); code != 0 {
		t.Fatalf("exit code %d after SIGQUIT", code)
	}
}
