package server

import (
	"bytes"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/turnd/turnd/internal/loglimit"
)

// TestPionLinesLimitedPerFormat: pion's lines are limited a kind per
// format string, and the next second's line says how many were held back.
// The relay refuses peers without permission before pion's own check, so
// no server test reaches that line: its limit is checked here.
func TestPionLinesLimitedPerFormat(t *testing.T) {
	const format = "Relay %s: no permission for inbound peer %s, closing connection"
	const events = 500
	var ns atomic.Int64
	ns.Store(time.Unix(1000, 0).UnixNano())
	now := func() time.Time { return time.Unix(0, ns.Load()) }
	var out bytes.Buffer
	logs := pionLoggers{log: slog.New(slog.NewTextHandler(&out, nil)), kinds: loglimit.NewKinds(loglimit.PerSecond, now)}
	log := logs.NewLogger("turn")
	for range events {
		log.Infof(format, "127.0.0.1:50000", "127.0.0.2:40000")
	}
	log.Infof("Relay %s: another line", "127.0.0.1:50000")
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if n := strings.Count(out.String(), "no permission for inbound peer"); n != loglimit.PerSecond {
		t.Fatalf("%d lines of one format in a second made %d lines, want %d", events, n, loglimit.PerSecond)
	}
	if last := lines[len(lines)-1]; !strings.Contains(last, "another line") {
		t.Fatalf("another format's line held back with the first's: last line %q", last)
	}
	ns.Add(int64(time.Second))
	log.Infof(format, "127.0.0.1:50000", "127.0.0.2:40000")
	lines = strings.Split(strings.TrimSpace(out.String()), "\n")
	if last, want := lines[len(lines)-1], fmt.Sprintf("suppressed=%d", events-loglimit.PerSecond); !strings.Contains(last, want) {
		t.Fatalf("the next second's line %q, want %s", last, want)
	}
}
