package main

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/turnd/turnd/pkg/allocation"
	"github.com/turnd/turnd/pkg/httpapi"
)

// formatStatus is the human summary of a /status document.
func formatStatus(st httpapi.Status, addr string, now time.Time) string {
	var b strings.Builder
	fmt.Fprintf(&b, "turnd %s at %s: %s\n", st.Version, addr, stateLine(st, now))
	if d := st.Drain; d != nil {
		fmt.Fprintf(&b, "  drain:        %s left, deadline %s (in %s)\n", plural(st.Allocations.Total, "allocation"),
			d.Deadline.UTC().Format(time.RFC3339), secondsLeft(d.SecondsLeft))
		if st.Allocations.Total > 0 && !d.EndsBy.IsZero() && d.EndsBy.Before(d.Deadline) {
			fmt.Fprintf(&b, "                ends by %s (in %s) unless an allocation is refreshed\n",
				d.EndsBy.UTC().Format(time.RFC3339), until(now, d.EndsBy))
		}
	}
	fmt.Fprintf(&b, "  allocations:  %s\n", allocationsLine(st.Allocations))
	if e := expiryLine(st.Allocations, now); e != "" {
		fmt.Fprintf(&b, "                %s\n", e)
	}
	t := st.Traffic
	fmt.Fprintf(&b, "  relayed:      to peers %d packets, %s; from peers %d packets, %s\n",
		t.ToPeerPackets, bytesSI(t.ToPeerBytes), t.FromPeerPackets, bytesSI(t.FromPeerBytes))
	if f := st.Fleet; f != nil {
		fmt.Fprintf(&b, "  fleet:        %s\n", fleetLine(*f))
		if f.UsageQueued > 0 || f.UsageDropped > 0 {
			fmt.Fprintf(&b, "                usage records: %d waiting for Redis, %d lost to a full queue\n",
				f.UsageQueued, f.UsageDropped)
		}
	}
	for _, w := range st.Warnings {
		fmt.Fprintf(&b, "  warning:      %s\n", w)
	}
	fmt.Fprintf(&b, "  up:           %s (since %s)\n", time.Duration(st.UptimeSeconds*float64(time.Second)).Round(time.Second),
		st.StartedAt.UTC().Format(time.RFC3339))
	return b.String()
}

// fleetLine is "node n1, up; 3 allocations held fleet-wide; 1 outage since
// start", or while Redis is down what becomes of new allocations.
func fleetLine(f httpapi.FleetStatus) string {
	state := "up"
	if !f.Up {
		state = "DOWN"
		if f.Error != "" {
			state += " (" + f.Error + ")"
		}
		switch f.OnOutage {
		case "refuse":
			state += ", new allocations refused (on_outage: refuse)"
		default:
			state += ", new allocations on this node's limits only (on_outage: " + f.OnOutage + ")"
		}
	}
	return fmt.Sprintf("node %s, %s; %s held fleet-wide; %s since start", f.Node, state,
		plural(f.Held, "allocation"), plural(int(f.Outages), "outage"))
}

// stateLine says what turnd does with new allocations, and since when it
// drains.
func stateLine(st httpapi.Status, now time.Time) string {
	d := st.Drain
	switch {
	case d == nil && st.Accepting:
		return st.State + ", accepting new allocations"
	case d == nil:
		return st.State + ", refusing new allocations"
	}
	s := fmt.Sprintf("%s (%s) for %s", st.State, triggerName(d.Trigger), now.Sub(d.StartedAt).Round(time.Second))
	if st.Accepting {
		return s + ", still accepting new allocations (lame-duck delay)"
	}
	return s + ", refusing new allocations"
}

// expiryLine is "oldest made 3m0s ago; next expiry in 25s, last in 9m12s
// (2030-01-02T05:04:05Z) unless refreshed", or "" with no allocations.
func expiryLine(a httpapi.Allocations, now time.Time) string {
	var parts []string
	if a.Oldest != nil {
		parts = append(parts, fmt.Sprintf("oldest made %s ago", now.Sub(*a.Oldest).Round(time.Second)))
	}
	if a.NextExpiry != nil && a.LastExpiry != nil {
		parts = append(parts, fmt.Sprintf("next expiry in %s, last in %s (%s) unless refreshed",
			until(now, *a.NextExpiry), until(now, *a.LastExpiry), a.LastExpiry.UTC().Format(time.RFC3339)))
	}
	return strings.Join(parts, "; ")
}

// until is the whole seconds from now to t, never negative.
func until(now, t time.Time) time.Duration { return max(t.Sub(now), 0).Round(time.Second) }

// triggerName names the signal behind a drain trigger.
func triggerName(trigger string) string {
	switch trigger {
	case "terminate":
		return "SIGTERM"
	case "drain":
		return "SIGUSR1"
	case "quit":
		return "SIGQUIT"
	}
	return trigger
}

// allocationsLine is "3 (udp 2, tcp 1, tls 0)".
func allocationsLine(a httpapi.Allocations) string {
	return fmt.Sprintf("%d (%s)", a.Total, transportCounts(a))
}

// transportCounts is "udp 2, tcp 1, tls 0", in turnd's transport order.
func transportCounts(a httpapi.Allocations) string {
	var parts []string
	known := map[string]bool{}
	for _, t := range allocation.Transports() {
		known[t.String()] = true
		parts = append(parts, fmt.Sprintf("%s %d", t, a.ByTransport[t.String()]))
	}
	for _, name := range slices.Sorted(maps.Keys(a.ByTransport)) {
		if !known[name] {
			parts = append(parts, fmt.Sprintf("%s %d", name, a.ByTransport[name]))
		}
	}
	return strings.Join(parts, ", ")
}

// secondsLeft formats a countdown to whole seconds.
func secondsLeft(s float64) string {
	return (time.Duration(s * float64(time.Second))).Round(time.Second).String()
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// bytesSI formats a byte count with SI prefixes: "512 B", "1.5 MB".
func bytesSI(n uint64) string {
	const unit = 1000
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := uint64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %cB", float64(n)/float64(div), "kMGTPE"[exp])
}
