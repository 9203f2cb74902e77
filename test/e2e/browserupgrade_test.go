package e2e

import (
	"net"
	"strconv"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/turnd/turnd/internal/testturn"
)

// TestBrowserCallAcrossUpgrade: a Chromium call (relay-only, an unreliable
// data channel over turn: UDP) crosses `turnd upgrade` with no message lost
// and the same candidate pair; the old process exits, and the new one
// answers the call's Refreshes and its release at the hang-up. A 6 s
// lifetime has Chromium refresh every 3 s: a call that keeps going for
// longer than a lifetime after the old process exited was refreshed by the
// new one, or its allocations would have expired there.
func TestBrowserCallAcrossUpgrade(t *testing.T) {
	cfg := testConfig()
	cfg.Limits.MaxLifetime = 6 * time.Second
	// A port of its own: a successor adopts the HTTP listener only where
	// its address is the configured one.
	cfg.HTTP.Address = net.JoinHostPort("127.0.0.1", strconv.Itoa(testturn.FreeTCPPort(t)))
	srv := startChain(t, writeConfig(t, cfg), nil)
	b := newBrowser(t, "")
	before := b.startCall(demoServer("turn:" + srv.UDP + "?transport=udp"))

	// Numbered messages, one every 10 ms, a third of them sent when the
	// upgrade starts.
	var started bool
	b.eval("(window.running = burst(300, 10), true)", &started)
	var sent int
	b.eval("sentReaches(100)", &sent)
	old := srv.serving()
	successor, took := srv.upgrade()
	upgraded := time.Now()
	var r burstResult
	b.eval("window.running", &r)
	t.Logf("turnd upgrade: pid %d -> %d, the command took %v; across it %d of %d messages echoed",
		old.pid, successor.pid, took.Round(time.Millisecond), r.Echoed, r.Sent)
	if r.Sent != 300 || r.Echoed != r.Sent {
		t.Errorf("across the upgrade: %d of %d messages echoed, want every one", r.Echoed, r.Sent)
	}
	handed := srv.waitLog("handed over", 5*time.Second)
	t.Logf("old process: handed over %v allocations (%v stayed), frozen %v ns", handed["allocations_moved"],
		handed["allocations_stayed"], handed["frozen"])
	if handed["allocations_moved"] != 2.0 || handed["allocations_stayed"] != 0.0 {
		t.Errorf("handed over: moved %v, stayed %v; want the call's 2 moved, 0 stayed",
			handed["allocations_moved"], handed["allocations_stayed"])
	}
	if took := srv.waitLog("took over", time.Second); took["allocations"] != 2.0 {
		t.Errorf("took over %v allocations, want the call's 2", took["allocations"])
	}
	srv.waitGone(old, 5*time.Second)
	// The HTTP listener moved too: the new process answers on it, from its own table.
	if got := sumPrefix(srv.scrape(), "turnd_allocations{"); got != 2 {
		t.Errorf("the new process's /metrics: %v allocations, want the call's 2", got)
	}

	var after candidatePair
	b.eval("pair()", &after)
	if after != before {
		t.Errorf("the call changed its pair across the upgrade:\nbefore %+v\nafter  %+v", before, after)
	}
	// Served by the new process alone, for longer than a lifetime.
	r = b.burst(500, burstGap)
	if r.Sent != 500 || r.Echoed != r.Sent {
		t.Errorf("after the old process exited: %d of %d messages echoed, want every one", r.Echoed, r.Sent)
	}
	if d := time.Since(upgraded); d <= cfg.Limits.MaxLifetime {
		t.Fatalf("the call ran %v after the upgrade, not longer than a lifetime (%v): the test proves no Refresh",
			d, cfg.Limits.MaxLifetime)
	}
	b.eval("pair()", &after)
	if after != before {
		t.Errorf("the call changed its pair after the upgrade:\nbefore %+v\nafter  %+v", before, after)
	}
	if got := srv.usageRecords("", ""); len(got) != 0 {
		t.Errorf("allocations ended during the call: %v", got)
	}

	var ok bool
	b.eval("hangUp()", &ok)
	srv.waitLogCount("allocation deleted", 2, readDeadline)
	for _, rec := range srv.usageRecords("udp", "") {
		t.Logf("usage record: relay %v, reason %v, duration %v ns", rec["relay"], rec["reason"], rec["duration"])
		if rec["reason"] != "released" {
			t.Errorf("allocation of %v ended with reason %v, want released (Chromium's Refresh 0 at the hang-up)",
				rec["client"], rec["reason"])
		}
	}
	// The new process stops as any turnd does; the old one exited cleanly.
	successor.signal(t, unix.SIGTERM)
	srv.waitGone(successor, 5*time.Second)
	if code := srv.waitExit(5 * time.Second); code != 0 {
		t.Errorf("old process exit code %d, want 0", code)
	}
}
