package server

import "time"

// FleetRates is what SetFleetRates takes: the fleet client's rate methods.
type FleetRates = fleetRates

// SetFleetRates shares limits.user_total_bps across a fleet through f.
func (s *Server) SetFleetRates(f FleetRates) { s.setFleetRates(f) }

// SampleFleetRates measures, publishes and applies the users' rates at now.
func (s *Server) SampleFleetRates(now time.Time) { s.sampleFleetRates(now) }
