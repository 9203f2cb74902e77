package e2e

import (
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// pidfileHolds fails unless path is a regular file (not a link) holding pid.
func pidfileHolds(t *testing.T, path string, pid int) {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !fi.Mode().IsRegular() || string(b) != strconv.Itoa(pid)+"\n" {
		t.Errorf("pidfile %s: mode %v, content %q; want a regular file holding %d", path, fi.Mode(), b, pid)
	}
}

// TestPidfileNotWrittenThroughALink: a symbolic link where the pidfile
// goes is replaced by the pidfile, its target left as it was, and on exit
// turnd removes its pidfile and nothing else.
func TestPidfileNotWrittenThroughALink(t *testing.T) {
	dir := t.TempDir()
	victim := filepath.Join(dir, "victim")
	if err := os.WriteFile(victim, []byte("precious\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := testConfig()
	cfg.PIDFile = filepath.Join(dir, "turnd.pid")
	if err := os.Symlink(victim, cfg.PIDFile); err != nil {
		t.Fatal(err)
	}
	srv := start(t, cfg)
	pidfileHolds(t, cfg.PIDFile, srv.cmd.Process.Pid)
	srv.signal(syscall.SIGTERM)
	if code := srv.waitExit(10 * time.Second); code != 0 {
		t.Fatalf("exit %d", code)
	}
	if _, err := os.Lstat(cfg.PIDFile); !os.IsNotExist(err) {
		t.Errorf("pidfile still there after the exit: %v", err)
	}
	if b, err := os.ReadFile(victim); err != nil || string(b) != "precious\n" {
		t.Errorf("the link's target now holds %q (%v)", b, err)
	}
}

// TestPidfileOfAnotherProcessLeftOnExit: once the pidfile's path names
// another file (a second instance's pidfile), turnd leaves it on exit.
func TestPidfileOfAnotherProcessLeftOnExit(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig()
	cfg.PIDFile = filepath.Join(dir, "turnd.pid")
	srv := start(t, cfg)
	pidfileHolds(t, cfg.PIDFile, srv.cmd.Process.Pid)
	next := filepath.Join(dir, "next")
	if err := os.WriteFile(next, []byte("4242\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(next, cfg.PIDFile); err != nil {
		t.Fatal(err)
	}
	srv.signal(syscall.SIGTERM)
	if code := srv.waitExit(10 * time.Second); code != 0 {
		t.Fatalf("exit %d", code)
	}
	pidfileHolds(t, cfg.PIDFile, 4242)
}

// TestAdminTokenFileModeWarned: an admin token file every user can read is
// run with and warned about at start, once; after a chmod every user can
// write, the next reload warns again and admin requests are refused (503)
// even with the right token.
func TestAdminTokenFileModeWarned(t *testing.T) {
	const token = "e2e-admin-token-value"
	tokenFile := filepath.Join(t.TempDir(), "admin-token")
	if err := os.WriteFile(tokenFile, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(tokenFile, 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := testConfig()
	cfg.HTTP.AdminTokenFile = tokenFile
	srv := start(t, cfg)
	line := srv.waitLog("admin token file", 5*time.Second)
	if msg := line["msg"].(string); line["level"] != "WARN" || !strings.Contains(msg, "readable by every user (mode 0644)") {
		t.Errorf("start warning %v", line)
	}
	get := func() int {
		t.Helper()
		req, err := http.NewRequest("GET", "http://"+srv.HTTP+"/sessions", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := get(); code != http.StatusOK {
		t.Fatalf("/sessions with the token, file readable by all: %d, want 200", code)
	}

	if err := os.Chmod(tokenFile, 0o666); err != nil {
		t.Fatal(err)
	}
	srv.signal(syscall.SIGHUP)
	srv.waitLog("writable by every user", 5*time.Second)
	if code := get(); code != http.StatusServiceUnavailable {
		t.Fatalf("/sessions with the token, file writable by all: %d, want 503", code)
	}

	if err := os.Chmod(tokenFile, 0o600); err != nil {
		t.Fatal(err)
	}
	srv.signal(syscall.SIGHUP)
	srv.waitLogCount("reloaded", 2, 5*time.Second)
	if code := get(); code != http.StatusOK {
		t.Fatalf("/sessions with the token after chmod 0600: %d, want 200", code)
	}
	srv.mu.Lock()
	defer srv.mu.Unlock()
	n := 0
	for _, l := range srv.lines {
		if msg, _ := l["msg"].(string); strings.Contains(msg, "admin token file") {
			n++
		}
	}
	if n != 2 {
		t.Errorf("%d warnings about the token file, want 2 (start, first reload)", n)
	}
}

// TestAdminRefusalLinesAreBounded: while the token file cannot be used,
// every admin request is refused with a line, and any HTTP client can send
// them: at most 10 a second reach the log, and a later one says how many
// were held back.
func TestAdminRefusalLinesAreBounded(t *testing.T) {
	tokenFile := filepath.Join(t.TempDir(), "admin-token")
	cfg := testConfig()
	cfg.HTTP.AdminTokenFile = tokenFile // never written: every request fails to read it
	srv := start(t, cfg)
	const requests = 200
	began := time.Now()
	for range requests {
		resp, err := http.Get("http://" + srv.HTTP + "/sessions")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusServiceUnavailable {
			t.Fatalf("/sessions without a token file: %d, want 503", resp.StatusCode)
		}
	}
	// Each second the requests touched lets 10 through.
	bound := 10 * (int(time.Since(began)/time.Second) + 2)
	// The harness's copy of the log may lag turnd's stderr.
	srv.waitLog("admin request refused", 5*time.Second)
	srv.mu.Lock()
	n := 0
	for _, l := range srv.lines {
		if l["msg"] == "admin request refused" {
			n++
		}
	}
	srv.mu.Unlock()
	if n == 0 || n > bound {
		t.Fatalf("%d requests refused made %d log lines, want 1..%d", requests, n, bound)
	}
	// The next second's first line carries the count: keep asking, paced,
	// for at most 3 s.
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); <-tick.C {
		if resp, err := http.Get("http://" + srv.HTTP + "/sessions"); err == nil {
			resp.Body.Close()
		}
		srv.mu.Lock()
		for _, l := range srv.lines {
			if l["msg"] == "admin request refused" && l["suppressed"] != nil {
				srv.mu.Unlock()
				return
			}
		}
		srv.mu.Unlock()
	}
	t.Fatal("no later line said how many were suppressed")
}
