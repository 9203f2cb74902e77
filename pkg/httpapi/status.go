package httpapi

import (
	"time"

	"github.com/turnd/turnd/pkg/allocation"
	"github.com/turnd/turnd/pkg/drain"
)

// Status is the /status document. Field names are a public interface
// (turnd status, dashboards, scripts): add, never rename.
type Status struct {
	State         string         `json:"state"` // serving, draining, stopped
	Accepting     bool           `json:"accepting"`
	Version       string         `json:"version"`
	StartedAt     time.Time      `json:"started_at"`
	UptimeSeconds float64        `json:"uptime_seconds"`
	Allocations   Allocations    `json:"allocations"`
	Traffic       Traffic        `json:"traffic"`
	Drain         *DrainProgress `json:"drain,omitempty"`
}

// Allocations counts live allocations, in total and by client transport.
type Allocations struct {
	Total       int            `json:"total"`
	ByTransport map[string]int `json:"by_transport"`
}

// Traffic is what has been relayed since start.
type Traffic struct {
	ToPeerPackets   uint64 `json:"to_peer_packets"`
	ToPeerBytes     uint64 `json:"to_peer_bytes"`
	FromPeerPackets uint64 `json:"from_peer_packets"`
	FromPeerBytes   uint64 `json:"from_peer_bytes"`
}

// DrainProgress is present once a drain has started.
type DrainProgress struct {
	Trigger     string    `json:"trigger"` // drain (SIGUSR1), terminate (SIGTERM/SIGINT)
	StartedAt   time.Time `json:"started_at"`
	Deadline    time.Time `json:"deadline"`
	SecondsLeft float64   `json:"seconds_left"`
}

// snapshot assembles the status document now.
func (a *API) snapshot() Status {
	now := time.Now()
	st := Status{
		State:         drain.Serving.String(),
		Accepting:     true,
		Version:       a.opts.Version,
		StartedAt:     a.opts.Started,
		UptimeSeconds: now.Sub(a.opts.Started).Seconds(),
		Allocations:   Allocations{ByTransport: map[string]int{}},
	}
	if a.opts.Allocations != nil {
		for t, n := range a.opts.Allocations() {
			st.Allocations.ByTransport[t.String()] = n
			st.Allocations.Total += n
		}
	} else {
		for _, t := range allocation.Transports() {
			st.Allocations.ByTransport[t.String()] = 0
		}
	}
	if c := a.opts.Traffic; c != nil {
		st.Traffic = Traffic{
			ToPeerPackets: c.ToPeerPackets.Load(), ToPeerBytes: c.ToPeerBytes.Load(),
			FromPeerPackets: c.FromPeerPackets.Load(), FromPeerBytes: c.FromPeerBytes.Load(),
		}
	}
	if a.opts.Drain != nil {
		ds := a.opts.Drain()
		st.State, st.Accepting = ds.Phase.String(), ds.Accepting
		if ds.Phase != drain.Serving {
			st.Drain = &DrainProgress{
				Trigger: ds.Trigger.String(), StartedAt: ds.Started, Deadline: ds.Deadline,
				SecondsLeft: max(0, ds.Deadline.Sub(now).Seconds()),
			}
		}
	}
	return st
}
