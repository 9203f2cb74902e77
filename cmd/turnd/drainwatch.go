package main

import (
	"fmt"
	"io"
	"time"

	"github.com/turnd/turnd/pkg/httpapi"
)

const (
	// watchInterval is how often `turnd drain --wait` looks at the process
	// and /status: a human watches it, so once a second is plenty.
	watchInterval = time.Second
	// overdueMargin is how long past its drain deadline turnd may take to
	// close what is left and exit before --wait gives up on it.
	overdueMargin = 30 * time.Second
)

// drainWatch follows a draining turnd until its process has exited. The
// liveness check, /status, clock and ticker are passed in, so tests drive
// it without a process or real time.
type drainWatch struct {
	pid   int
	alive func() bool
	fetch func() (httpapi.Status, error)
	now   func() time.Time
	tick  <-chan time.Time
	out   io.Writer
	// tty redraws one progress line in place; otherwise a line is printed
	// whenever the state, the allocation count or an error changes.
	tty bool
	// fallback is the deadline assumed until /status reports one.
	fallback time.Time
}

// drainSummary is what --wait reports once turnd has exited.
type drainSummary struct {
	pid      int
	duration time.Duration // from the drain's start to the exit being seen
	atStart  int           // allocations when the drain started; -1 if never seen
	last     int           // allocations at the last look before the exit
	deadline time.Time
	exited   time.Time
}

// String is the closing line of `turnd drain --wait`.
func (s drainSummary) String() string {
	msg := fmt.Sprintf("turnd (pid %d) exited %s after the drain started", s.pid, s.duration.Round(100*time.Millisecond))
	switch {
	case s.atStart < 0:
		return msg + " (its allocations were never seen: /status was unreachable)"
	case !s.deadline.IsZero() && !s.exited.Before(s.deadline) && s.last > 0:
		return fmt.Sprintf("%s: %s drained of %d; the deadline passed with about %d live, which turnd closed",
			msg, plural(max(0, s.atStart-s.last), "allocation"), s.atStart, s.last)
	}
	return fmt.Sprintf("%s: %s drained", msg, plural(s.atStart, "allocation"))
}

// run watches until the process exits (nil error) or outlives its
// deadline by overdueMargin (errStillRunning). start is when the drain
// began; atStart the allocation count then, or -1 if unknown.
func (w *drainWatch) run(start time.Time, atStart int) (drainSummary, error) {
	sum := drainSummary{pid: w.pid, atStart: atStart, last: max(atStart, 0)}
	deadline, lastKey := w.fallback, ""
	for first := true; ; first = false {
		if !first {
			<-w.tick
		}
		now := w.now()
		alive := w.alive()
		var st httpapi.Status
		var err error
		if alive {
			// /status goes away as turnd exits: look at the process again
			// before reporting the failure as news.
			if st, err = w.fetch(); err != nil {
				alive = w.alive()
			}
		}
		if !alive {
			if w.tty && lastKey != "" {
				fmt.Fprintln(w.out)
			}
			sum.exited, sum.duration, sum.deadline = now, now.Sub(start), deadline
			return sum, nil
		}
		var line, key string
		switch {
		case err != nil:
			line = fmt.Sprintf("waiting for turnd (pid %d) to exit; /status: %v", w.pid, err)
			key = line
		case st.Drain == nil:
			line = fmt.Sprintf("%s: %s, drain not started yet", st.State, plural(st.Allocations.Total, "allocation"))
			key = line
		default:
			deadline, start = st.Drain.Deadline, st.Drain.StartedAt
			if sum.atStart < 0 {
				sum.atStart = st.Allocations.Total
			}
			sum.last = st.Allocations.Total
			line = progressLine(st, now)
			key = fmt.Sprintf("%s %v %d", st.State, st.Accepting, st.Allocations.Total)
		}
		switch {
		case w.tty:
			fmt.Fprintf(w.out, "\r\033[K%s", line)
		case key != lastKey:
			fmt.Fprintln(w.out, line)
		}
		lastKey = key
		if over := now.Sub(deadline); over > overdueMargin {
			if w.tty {
				fmt.Fprintln(w.out)
			}
			return sum, fmt.Errorf("pid %d, %s past the deadline %s: %w", w.pid, over.Round(time.Second),
				deadline.UTC().Format(time.RFC3339), errStillRunning)
		}
	}
}

// progressLine is one line of drain progress.
func progressLine(st httpapi.Status, now time.Time) string {
	d := st.Drain
	accepting := ""
	if st.Accepting {
		accepting = " (lame-duck delay: still accepting new allocations)"
	}
	left := d.Deadline.Sub(now).Round(time.Second)
	line := fmt.Sprintf("%s%s: %s left (%s), deadline in %s", st.State, accepting,
		plural(st.Allocations.Total, "allocation"), transportCounts(st.Allocations), max(left, 0))
	if last := st.Allocations.LastExpiry; last != nil && last.Before(d.Deadline) {
		line += fmt.Sprintf(", last expires in %s unless refreshed", until(now, *last))
	}
	return line
}
