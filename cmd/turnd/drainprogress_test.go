package main

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/turnd/turnd/pkg/allocation"
	"github.com/turnd/turnd/pkg/drain"
)

// TestDrainProgressLogsExpiries: once a drain starts, every tick logs the
// allocations left, the oldest one's age and when the last ends unless
// refreshed; nothing is logged before the drain or after stop.
func TestDrainProgressLogsExpiries(t *testing.T) {
	t0 := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		},
	}))
	st := drain.Status{Phase: drain.Draining, Deadline: t0.Add(time.Hour)}
	p := drainProgress{
		log:    log,
		status: func() drain.Status { return st },
		count:  func() int { return 5 },
		expiry: func() allocation.Expiry {
			return allocation.Expiry{Oldest: t0.Add(-3 * time.Minute), Next: t0.Add(25 * time.Second), Last: t0.Add(9 * time.Minute)}
		},
		now: func() time.Time { return t0 },
	}
	// Stopped before the drain starts, with a tick waiting: the tick stays
	// unread. A run that took ticks before the drain started would pick the
	// tick or the stop at random (select), so a hundred rounds catch it.
	for range 100 {
		ticks, stop, done := make(chan time.Time, 1), make(chan struct{}), make(chan struct{})
		ticks <- t0
		close(stop)
		go func() { p.run(make(chan struct{}), stop, ticks); close(done) }()
		<-done
		if len(ticks) != 1 || buf.Len() != 0 {
			t.Fatalf("a tick was taken before the drain started:\n%s", buf.String())
		}
	}

	started, stop := make(chan struct{}), make(chan struct{})
	ticks := make(chan time.Time)
	done := make(chan struct{})
	go func() { p.run(started, stop, ticks); close(done) }()
	close(started)
	ticks <- t0
	ticks <- t0 // the second send returns once the first line is written
	close(stop)
	<-done
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("got %d lines, want 2:\n%s", len(lines), buf.String())
	}
	want := `level=INFO msg="drain progress" allocations=5 oldest_age=3m0s next_expiry_in=25s last_expiry_in=9m0s last_expiry=2030-01-02T03:13:05Z deadline_in=1h0m0s`
	if lines[0] != want {
		t.Errorf("line:\n%s\nwant:\n%s", lines[0], want)
	}
}

// TestDrainReporterSignalsStart: the reporter closes started when the
// drain starts, and its first line says when the last allocation expires.
func TestDrainReporterSignalsStart(t *testing.T) {
	var buf bytes.Buffer
	started := make(chan struct{})
	now := time.Now()
	report := drainReporter(slog.New(slog.NewTextHandler(&buf, nil)), newNotifier(slog.New(slog.DiscardHandler)),
		func() allocation.Expiry {
			return allocation.Expiry{Oldest: now, Next: now.Add(time.Minute), Last: now.Add(time.Minute)}
		},
		started)
	report(drain.Status{Phase: drain.Draining, Allocations: 1, Deadline: now.Add(time.Hour)})
	select {
	case <-started:
	default:
		t.Fatal("started not closed when the drain started")
	}
	if !strings.Contains(buf.String(), "last_expiry_in=") {
		t.Errorf("drain started line lacks the last expiry:\n%s", buf.String())
	}
	report(drain.Status{Phase: drain.Stopped}) // no second close
}
