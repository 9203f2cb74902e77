package server_test

import (
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/turnd/turnd/internal/testturn"
	"github.com/turnd/turnd/pkg/server"
)

// refusals records the attributes of every "bad credentials" line.
type refusals struct {
	mu    sync.Mutex
	lines []map[string]string
}

func (r *refusals) logger() *slog.Logger {
	return slog.New(hookLog(func(rec slog.Record) {
		if rec.Message != "allocation refused: bad credentials" {
			return
		}
		attrs := map[string]string{}
		rec.Attrs(func(a slog.Attr) bool { attrs[a.Key] = a.Value.String(); return true })
		r.mu.Lock()
		r.lines = append(r.lines, attrs)
		r.mu.Unlock()
	}))
}

func (r *refusals) take() []map[string]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.lines
	r.lines = nil
	return out
}

// keys returns a line's attribute names, sorted.
func keys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// TestUnknownUserLooksLikeAWrongPassword: an unknown user and a known user
// with a wrong password get the same answer (401 with a fresh nonce) and the
// same log line, because both go through the same integrity check (the
// unknown one against a decoy key).
func TestUnknownUserLooksLikeAWrongPassword(t *testing.T) {
	var log refusals
	opts := testOptions()
	opts.Logger = log.logger()
	s := start(t, opts)

	wrong := dialAs(t, s, "udp", "demo", "not-the-password")
	unknown := dialAs(t, s, "udp", "nobody", "not-the-password")
	for _, c := range []*testturn.Client{wrong, unknown} {
		if code := testturn.ErrorCode(c.Allocate()); code != 401 {
			t.Fatalf("bad credentials answered %d, want 401", code)
		}
	}
	lines := log.take()
	if len(lines) != 2 {
		t.Fatalf("%d refusal lines for a wrong password and an unknown user, want one each: %v", len(lines), lines)
	}
	if a, b := keys(lines[0]), keys(lines[1]); !slices.Equal(a, b) {
		t.Fatalf("log lines differ: wrong password %v, unknown user %v", a, b)
	}
	if lines[0]["user"] != "demo" || lines[1]["user"] != "nobody" {
		t.Fatalf("users logged: %q, %q", lines[0]["user"], lines[1]["user"])
	}
}

// TestFailedAuthLogIsBounded: a client-chosen username is cut in the log,
// and a burst of refusals makes at most LogLinesPerSecond lines per second,
// the next line saying how many were held back.
func TestFailedAuthLogIsBounded(t *testing.T) {
	var log refusals
	opts := testOptions()
	opts.Logger = log.logger()
	s := start(t, opts)
	var mu sync.Mutex
	now := time.Unix(1000, 0)
	s.SetLogClock(func() time.Time { mu.Lock(); defer mu.Unlock(); return now })

	long := dialAs(t, s, "udp", strings.Repeat("u", 500), "x")
	if code := testturn.ErrorCode(long.Allocate()); code != 401 {
		t.Fatalf("long username answered %d", code)
	}
	lines := log.take()
	if len(lines) != 1 || len(lines[0]["user"]) > 80 || !strings.Contains(lines[0]["user"], "truncated") {
		t.Fatalf("a 500-byte username logged as %v", lines)
	}

	const burst = 30
	c := dialAs(t, s, "udp", "demo", "wrong")
	for range burst {
		if code := testturn.ErrorCode(c.Allocate()); code != 401 {
			t.Fatalf("wrong password answered %d", code)
		}
	}
	if n := len(log.take()); n != server.LogLinesPerSecond-1 {
		t.Fatalf("%d refusals in one second made %d lines, want %d", burst, n, server.LogLinesPerSecond-1)
	}
	mu.Lock()
	now = now.Add(time.Second)
	mu.Unlock()
	c.Allocate()
	lines = log.take()
	held := burst - (server.LogLinesPerSecond - 1)
	if len(lines) != 1 || lines[0]["suppressed"] != strconv.Itoa(held) {
		t.Fatalf("next second's line %v, want suppressed=%d", lines, held)
	}
}
