package server

import (
	"sync"
	"time"

	"github.com/turnd/turnd/pkg/config"
)

// RejectBandwidth is the Observer's reason for a 486 past limits.total_bps.
const RejectBandwidth = "bandwidth"

// rateFor is the limit in bits per second of user's allocations (0: none).
func rateFor(l config.Limits, user string) int64 {
	if bps, ok := l.UserMaxBPS[user]; ok {
		return bps
	}
	return l.MaxBPS
}

// applyRates sets every live allocation's limit from the config in force,
// so a reload reaches them too.
func (s *Server) applyRates() {
	l := s.cfg.Load().Limits
	for _, info := range s.registry.List("") {
		_ = s.relay.SetRate(info.Relay, rateFor(l, info.User)) // gone meanwhile: nothing to hold
	}
}

// throughput estimates the relayed bit rate from the traffic totals, for
// limits.total_bps. It is sampled when an Allocate asks, not on a timer:
// the rate is the average since the previous sample at least a second old.
type throughput struct {
	mu    sync.Mutex
	at    time.Time
	bytes uint64
	bps   float64
}

// rate returns the estimate, given the byte total at now.
func (t *throughput) rate(now time.Time, total uint64) float64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.at.IsZero() {
		t.at, t.bytes = now, total
		return 0
	}
	if el := now.Sub(t.at); el >= time.Second {
		t.bps = float64(total-t.bytes) * 8 / el.Seconds()
		t.at, t.bytes = now, total
	}
	return t.bps
}

// overCapacity reports whether the server relays more than total_bps:
// what it relayed, on the wire (payload and IP and UDP headers, as
// max_bps counts), never what it dropped.
func (s *Server) overCapacity() bool {
	limit := s.cfg.Load().Limits.TotalBPS
	if limit <= 0 {
		return false
	}
	c := s.relay.Counters()
	return s.load.rate(time.Now(), c.ToPeerBytes.Load()+c.FromPeerBytes.Load()+c.HeaderBytes.Load()) >= float64(limit)
}
