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
	Offload       Offload        `json:"offload"`
	// Warnings lists problems found at start that turnd runs with; empty
	// when there are none.
	Warnings []string `json:"warnings"`
	// Fleet is this node's view of its fleet; absent on a single node.
	Fleet *FleetStatus `json:"fleet,omitempty"`
}

// Allocations counts live allocations, in total and by client transport,
// and says when they end if nobody refreshes them. The times are absent
// when no allocation is live.
type Allocations struct {
	Total       int            `json:"total"`
	ByTransport map[string]int `json:"by_transport"`
	// Oldest is when the oldest live allocation was made.
	Oldest *time.Time `json:"oldest_created_at,omitempty"`
	// NextExpiry is when the first live allocation ends unless refreshed.
	NextExpiry *time.Time `json:"next_expiry,omitempty"`
	// LastExpiry is when the last live allocation ends unless refreshed.
	LastExpiry *time.Time `json:"last_expiry,omitempty"`
}

// Traffic is what has been relayed since start.
type Traffic struct {
	ToPeerPackets   uint64 `json:"to_peer_packets"`
	ToPeerBytes     uint64 `json:"to_peer_bytes"`
	FromPeerPackets uint64 `json:"from_peer_packets"`
	FromPeerBytes   uint64 `json:"from_peer_bytes"`
	// The part of the above the kernel fast path relayed (relay.offload).
	KernelToPeerPackets   uint64 `json:"kernel_to_peer_packets"`
	KernelToClientPackets uint64 `json:"kernel_to_client_packets"`
}

// Offload is the kernel fast path as turnd started it.
type Offload struct {
	Mode       string   `json:"mode"` // off, tc
	Interfaces []string `json:"interfaces"`
	// Reason says why relay.offload auto runs in user space; empty otherwise.
	Reason string `json:"reason,omitempty"`
	// Gaps name the addresses whose traffic stays in user space although
	// the kernel path runs (a wildcard listen or relay address).
	Gaps []string `json:"gaps,omitempty"`
}

// DrainProgress is present once a drain has started.
type DrainProgress struct {
	Trigger     string    `json:"trigger"` // drain (SIGUSR1), terminate (SIGTERM/SIGINT)
	StartedAt   time.Time `json:"started_at"`
	Deadline    time.Time `json:"deadline"`
	SecondsLeft float64   `json:"seconds_left"`
	// AllocationsLeft is the live allocation count the drain waits for.
	AllocationsLeft int `json:"allocations_left"`
	// EndsBy is when the drain ends at the latest if no allocation is
	// refreshed or made: the last expiry, or the deadline if that comes
	// first; now when nothing is left to wait for.
	EndsBy time.Time `json:"ends_by"`
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
		Warnings:      append([]string{}, a.opts.Warnings...),
		Offload:       a.opts.Offload,
	}
	if st.Offload.Mode == "" {
		st.Offload.Mode = "off"
	}
	if st.Offload.Interfaces == nil {
		st.Offload.Interfaces = []string{}
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
	if a.opts.Expiry != nil && st.Allocations.Total > 0 {
		e := a.opts.Expiry()
		st.Allocations.Oldest, st.Allocations.NextExpiry, st.Allocations.LastExpiry = timeOrNil(e.Oldest),
			timeOrNil(e.Next), timeOrNil(e.Last)
	}
	if c := a.opts.Traffic; c != nil {
		c.Settle()
		st.Traffic = Traffic{
			ToPeerPackets: c.ToPeerPackets.Load(), ToPeerBytes: c.ToPeerBytes.Load(),
			FromPeerPackets: c.FromPeerPackets.Load(), FromPeerBytes: c.FromPeerBytes.Load(),
			KernelToPeerPackets: c.Kernel.ToPeerPackets.Load(), KernelToClientPackets: c.Kernel.ToClientPackets.Load(),
		}
	}
	if a.opts.Fleet.Status != nil {
		st.Fleet = a.opts.Fleet.Status()
	}
	if a.opts.Drain != nil {
		ds := a.opts.Drain()
		st.State, st.Accepting = ds.Phase.String(), ds.Accepting
		if ds.Phase != drain.Serving {
			st.Drain = &DrainProgress{
				Trigger: ds.Trigger.String(), StartedAt: ds.Started, Deadline: ds.Deadline,
				SecondsLeft:     max(0, ds.Deadline.Sub(now).Seconds()),
				AllocationsLeft: st.Allocations.Total,
				EndsBy:          ds.Deadline,
			}
			if last := st.Allocations.LastExpiry; last != nil && last.Before(ds.Deadline) {
				st.Drain.EndsBy = *last
			}
			if st.Allocations.Total == 0 && !ds.Accepting && now.Before(ds.Deadline) {
				st.Drain.EndsBy = now
			}
		}
	}
	return st
}

// timeOrNil leaves a zero time out of the document.
func timeOrNil(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}
