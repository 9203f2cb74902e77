package server

import (
	"maps"
	"sync"
	"time"
)

// FleetRates is what SetFleetRates takes: the fleet client's rate methods.
type FleetRates = fleetRates

// SetFleetRates shares limits.user_total_bps across a fleet through f.
func (s *Server) SetFleetRates(f FleetRates) { s.setFleetRates(f) }

// SampleFleetRates measures, publishes and applies the users' rates at now.
func (s *Server) SampleFleetRates(now time.Time) { s.sampleFleetRates(now) }

// FakeFleetRates is a FleetRates whose other nodes' figures the test sets
// and which keeps what the server published.
type FakeFleetRates struct {
	mu        sync.Mutex
	others    map[string]uint64
	published []map[string]uint64
}

// NewFakeFleetRates returns a fake whose other nodes relay others.
func NewFakeFleetRates(others map[string]uint64) *FakeFleetRates {
	return &FakeFleetRates{others: others}
}

func (f *FakeFleetRates) PublishRates(m map[string]uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.published = append(f.published, maps.Clone(m))
}

func (f *FakeFleetRates) OthersRate(user string) uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.others[user]
}

// SetOthers replaces the other nodes' figures.
func (f *FakeFleetRates) SetOthers(m map[string]uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.others = m
}

// Last is what the server published last; nil before it did.
func (f *FakeFleetRates) Last() map[string]uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.published) == 0 {
		return nil
	}
	return f.published[len(f.published)-1]
}

// Published is everything the server published, in order.
func (f *FakeFleetRates) Published() []map[string]uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]map[string]uint64(nil), f.published...)
}
