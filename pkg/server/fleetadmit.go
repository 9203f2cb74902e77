package server

import (
	"context"
	"errors"
	"fmt"

	"github.com/turnd/turnd/internal/traffic"
	"github.com/turnd/turnd/pkg/allocation"
	"github.com/turnd/turnd/pkg/fleet"
	"github.com/turnd/turnd/pkg/turn"
)

// Admit is turn.Admission.Admit: limits.user_allocations and
// fleet.total_allocations over the fleet, in one Redis round trip (none
// when neither is set), and fleet.on_outage when Redis cannot answer.
func (f *fleetNode) Admit(ctx context.Context, user string) error {
	c := f.client.Load()
	if c == nil {
		f.Hold(user) // a successor's first instant: the table's quotas alone
		return nil
	}
	cfg := f.s.cfg.Load()
	userLimit, totalLimit := cfg.Limits.UserAllocations, cfg.Fleet.TotalAllocations
	if userLimit == 0 && totalLimit == 0 {
		c.Hold(user) // counted for the fleet's sessions, nothing to check
		f.admitted.Add(1)
		return nil
	}
	err := c.Admit(ctx, user, userLimit, totalLimit)
	switch {
	case err == nil:
		f.admitted.Add(1)
		return nil
	case errors.Is(err, fleet.ErrUserQuota), errors.Is(err, fleet.ErrTotalQuota):
		f.refused.Add(1)
		return fmt.Errorf("%w: %w", turn.ErrAdmissionQuota, err)
	}
	return f.outage(c, user, err)
}

// Busy is turn.Admission.Busy: fleet.on_outage, as if Redis could not
// answer.
func (f *fleetNode) Busy(user string) error {
	c := f.client.Load()
	if c == nil {
		f.Hold(user)
		return nil
	}
	return f.outage(c, user, errors.New("too many allocations waiting for redis"))
}

// outage applies fleet.on_outage to an Allocate the fleet could not decide.
func (f *fleetNode) outage(c *fleet.Client, user string, why error) error {
	if f.s.cfg.Load().Fleet.OnOutage == "refuse" {
		f.refused.Add(1)
		return fmt.Errorf("%w: %w", turn.ErrAdmissionUnavailable, why)
	}
	f.fallback.Add(1)
	c.Hold(user)
	return nil
}

// Hold is turn.Admission.Hold.
func (f *fleetNode) Hold(user string) {
	f.mu.Lock()
	c := f.client.Load()
	if c == nil {
		f.early[user]++
	}
	f.mu.Unlock()
	if c != nil {
		c.Hold(user)
	}
}

// Release is turn.Admission.Release.
func (f *fleetNode) Release(user string) {
	f.mu.Lock()
	c := f.client.Load()
	if c == nil {
		if n := f.early[user] - 1; n > 0 {
			f.early[user] = n
		} else {
			delete(f.early, user)
		}
	}
	f.mu.Unlock()
	if c != nil {
		c.Release(user)
	}
}

// ended appends an ended allocation's usage record to the fleet's stream.
func (f *fleetNode) ended(a *allocation.Allocation, u traffic.Usage, reason string) {
	r := fleet.Record{
		Allocation: firstRelayed(a).String(), User: a.User, Client: a.Tuple.Client.String(),
		Transport: a.Transport.String(), Relay: relayText(a), Reason: reason,
		Start: a.Created, Duration: f.s.now().Sub(a.Created),
		ToPeerBytes: u.ToPeerBytes, ToPeerPackets: u.ToPeerPackets,
		FromPeerBytes: u.FromPeerBytes, FromPeerPackets: u.FromPeerPackets,
	}
	f.mu.Lock()
	c := f.client.Load()
	if c == nil && len(f.usage) < maxEarlyUsage {
		f.usage = append(f.usage, r)
	}
	f.mu.Unlock()
	if c != nil {
		c.Usage(r)
	}
}

// FleetStats is the fleet as this node sees it, for /status and metrics.
type FleetStats struct {
	Node                        string
	Up                          bool
	Err                         string // why Redis is unusable; "" while up
	Outages                     uint64
	Held                        int // this node's allocations the fleet counts
	UsageQueued                 int
	UsageDropped                uint64
	OnOutage                    string
	Admitted, Refused, Fallback uint64 // Allocates the fleet admitted, refused, or let in by fleet.on_outage
}

// FleetStats returns the fleet's state; false when fleet is off.
func (s *Server) FleetStats() (FleetStats, bool) {
	f := s.fleet
	if f == nil {
		return FleetStats{}, false
	}
	st := FleetStats{Node: f.opts.Node, OnOutage: s.cfg.Load().Fleet.OnOutage,
		Admitted: f.admitted.Load(), Refused: f.refused.Load(), Fallback: f.fallback.Load()}
	c := f.client.Load()
	if c == nil {
		st.Err = "not connected yet"
		return st, true
	}
	cs := c.Stats()
	st.Up, st.Outages, st.Held, st.UsageQueued, st.UsageDropped = cs.Up, cs.Outages, cs.Held, cs.UsageQueued, cs.UsageDropped
	if cs.Err != nil {
		st.Err = cs.Err.Error()
	}
	return st, true
}
