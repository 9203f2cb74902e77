package main

import (
	"log/slog"
	"time"

	"github.com/turnd/turnd/pkg/allocation"
	"github.com/turnd/turnd/pkg/drain"
)

// drainLogInterval is how often a running drain logs its progress: often
// enough that someone reading the log knows what it waits for, rarely
// enough that a drain of an hour stays a screenful.
const drainLogInterval = 30 * time.Second

// drainProgress logs a running drain's progress: the allocations left and
// when they end if nobody refreshes them, which is when the drain ends at
// the latest short of its deadline.
type drainProgress struct {
	log    *slog.Logger
	status func() drain.Status
	count  func() int
	expiry func() allocation.Expiry
	now    func() time.Time
}

// run logs a line at every tick from the drain's start until stop closes.
func (p drainProgress) run(started, stop <-chan struct{}, ticks <-chan time.Time) {
	select {
	case <-started:
	case <-stop:
		return
	}
	for {
		select {
		case <-ticks:
			if st := p.status(); st.Phase == drain.Draining {
				p.logLine(st)
			}
		case <-stop:
			return
		}
	}
}

func (p drainProgress) logLine(st drain.Status) {
	now := p.now()
	args := []any{"allocations", p.count()}
	args = append(args, expiryArgs(p.expiry(), now)...)
	args = append(args, "deadline_in", until(now, st.Deadline).String())
	p.log.Info("drain progress", args...)
}

// expiryArgs are the log fields saying how old the oldest allocation is and
// when the live ones end unless refreshed; none with no allocation.
func expiryArgs(e allocation.Expiry, now time.Time) []any {
	var args []any
	if !e.Oldest.IsZero() {
		args = append(args, "oldest_age", now.Sub(e.Oldest).Round(time.Second).String())
	}
	if !e.Next.IsZero() {
		args = append(args, "next_expiry_in", until(now, e.Next).String(), "last_expiry_in", until(now, e.Last).String(),
			"last_expiry", e.Last.UTC().Format(time.RFC3339))
	}
	return args
}
