package server_test

import (
	"context"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/turnd/turnd/pkg/server"
)

// lineLog records every log line's message and attributes.
type lineLog struct {
	mu      sync.Mutex
	lines   []logLine
	changed chan struct{} // coalesced wake-up after every line
}

type logLine struct {
	msg   string
	attrs map[string]string
}

func (l *lineLog) logger() *slog.Logger {
	return slog.New(hookLog(func(rec slog.Record) {
		line := logLine{msg: rec.Message, attrs: map[string]string{}}
		rec.Attrs(func(a slog.Attr) bool { line.attrs[a.Key] = a.Value.String(); return true })
		l.mu.Lock()
		l.lines = append(l.lines, line)
		select {
		case l.wake() <- struct{}{}:
		default:
		}
		l.mu.Unlock()
	}))
}

// leveled returns l's logger behind level, which the test may change as a
// reload changes turnd's.
func (l *lineLog) leveled(level slog.Leveler) *slog.Logger {
	return slog.New(levelFilter{Handler: l.logger().Handler(), level: level})
}

// levelFilter drops the records under level.
type levelFilter struct {
	slog.Handler
	level slog.Leveler
}

func (f levelFilter) Enabled(_ context.Context, l slog.Level) bool { return l >= f.level.Level() }

// wake returns the notification channel; l.mu is held.
func (l *lineLog) wake() chan struct{} {
	if l.changed == nil {
		l.changed = make(chan struct{}, 1)
	}
	return l.changed
}

// wait waits until lines (a selection such as l.matching) returns at
// least n lines, and returns them.
func (l *lineLog) wait(t *testing.T, n int, what string, lines func() []logLine) []logLine {
	t.Helper()
	timer := time.NewTimer(waitTimeout)
	defer timer.Stop()
	for {
		l.mu.Lock()
		ch := l.wake()
		l.mu.Unlock()
		if got := lines(); len(got) >= n {
			return got
		}
		select {
		case <-ch:
		case <-timer.C:
			t.Fatalf("%d %q lines, want %d", len(lines()), what, n)
		}
	}
}

// matching returns the lines whose message is msg.
func (l *lineLog) matching(msg string) []logLine {
	return l.selected(func(m string) bool { return m == msg })
}

// containing returns the lines whose message contains part (pion's, which
// are formatted).
func (l *lineLog) containing(part string) []logLine {
	return l.selected(func(m string) bool { return strings.Contains(m, part) })
}

func (l *lineLog) selected(pick func(msg string) bool) []logLine {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []logLine
	for _, line := range l.lines {
		if pick(line.msg) {
			out = append(out, line)
		}
	}
	return out
}

// frozenClock stops the clock of s's log limits; the returned function
// moves it on by d.
func frozenClock(s *server.Server) (advance func(d time.Duration)) {
	now, advance := stoppedClock()
	s.SetLogClock(now)
	return advance
}

// stoppedClock returns a clock that stands still, safe for concurrent
// readers, until advance moves it on by d.
func stoppedClock() (now func() time.Time, advance func(d time.Duration)) {
	var ns atomic.Int64
	ns.Store(time.Unix(1000, 0).UnixNano())
	return func() time.Time { return time.Unix(0, ns.Load()) }, func(d time.Duration) { ns.Add(int64(d)) }
}

// wantBounded checks that lines, of one kind, number LogLinesPerSecond (the
// most one frozen second lets through) although events were many more.
func wantBounded(t *testing.T, lines []logLine, what string, events int) {
	t.Helper()
	if n := len(lines); n != server.LogLinesPerSecond {
		t.Fatalf("%d events in one second made %d %q lines, want %d", events, n, what, server.LogLinesPerSecond)
	}
}

// wantSuppressed checks that the last of lines says how many lines of its
// kind were held back before it.
func wantSuppressed(t *testing.T, lines []logLine, what string, held int) {
	t.Helper()
	if len(lines) == 0 {
		t.Fatalf("no %q line", what)
	}
	last := lines[len(lines)-1]
	if got := last.attrs["suppressed"]; got != strconv.Itoa(held) {
		t.Fatalf("the next second's %q line %v: suppressed=%q, want %d", what, last, got, held)
	}
}
