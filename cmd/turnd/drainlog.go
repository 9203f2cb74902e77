package main

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/turnd/turnd/pkg/allocation"
	"github.com/turnd/turnd/pkg/drain"
)

// drainReporter turns drain status changes into log lines and service
// manager notifications, and closes started when a drain starts. It runs on
// the drain's goroutine and must not block.
func drainReporter(log *slog.Logger, n *notifier, expiry func() allocation.Expiry, started chan<- struct{}) func(drain.Status) {
	last := drain.Status{Phase: drain.Serving, Accepting: true}
	return func(st drain.Status) {
		switch {
		case last.Phase == drain.Serving && st.Phase == drain.Draining:
			args := []any{"trigger", st.Trigger.String(), "allocations", st.Allocations, "accepting_new", st.Accepting,
				"deadline", st.Deadline.Format(time.RFC3339)}
			log.Info("drain started: readiness fails, live allocations keep relaying",
				append(args, expiryArgs(expiry(), time.Now())...)...)
			n.stopping()
			close(started)
		case last.Accepting && !st.Accepting && st.Phase == drain.Draining:
			log.Info("drain: refusing new allocations", "allocations", st.Allocations)
		case st.Phase == drain.Draining && st.Allocations != last.Allocations:
			log.Debug("drain progress", "allocations", st.Allocations)
		}
		if st.Phase != drain.Serving {
			n.status(fmt.Sprintf("%s: %d allocations left, deadline in %s", st.Phase, st.Allocations,
				time.Until(st.Deadline).Round(time.Second)))
		}
		last = st
	}
}
