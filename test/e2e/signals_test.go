package e2e

import (
	"strconv"
	"syscall"
	"testing"
	"time"
)

// TestSIGTERMAfterSIGHUPBurst: with a config whose reload takes a while
// (20 000 users), 40 SIGHUPs then a SIGTERM start the drain before the
// reloads are done, and the burst coalesces instead of queueing 40 reloads.
func TestSIGTERMAfterSIGHUPBurst(t *testing.T) {
	cfg := testConfig()
	cfg.Log.Level = "info"
	for i := range 20000 {
		cfg.Auth.Users["user"+strconv.Itoa(i)] = "password-" + strconv.Itoa(i)
	}
	srv := start(t, cfg)

	srv.signal(syscall.SIGHUP)
	srv.waitLog("reloaded", 30*time.Second)
	for range 40 {
		srv.signal(syscall.SIGHUP)
	}
	sent := time.Now()
	srv.signal(syscall.SIGTERM)
	started := srv.waitLog("drain started", 30*time.Second)
	if d := logTime(t, started).Sub(sent); d > time.Second {
		t.Errorf("drain started %v after SIGTERM, behind the reloads", d)
	}
	srv.waitExit(30 * time.Second)
	reloads := 0
	srv.mu.Lock()
	for _, l := range srv.lines {
		if l["msg"] == "reloaded" {
			reloads++
		}
	}
	srv.mu.Unlock()
	// The first reload, then at most two for the burst: the one running
	// when the burst came, and the one slot behind it.
	if reloads > 3 {
		t.Errorf("%d reloads for 41 SIGHUPs, want them coalesced", reloads)
	}
	t.Logf("SIGTERM to drain: %v; reloads for 41 SIGHUPs: %d", logTime(t, started).Sub(sent), reloads)
}
