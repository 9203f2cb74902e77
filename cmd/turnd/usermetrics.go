package main

import (
	"github.com/turnd/turnd/internal/traffic"
	"github.com/turnd/turnd/pkg/metrics"
)

// userMetrics adapts the server's per-user usage to what /metrics reports,
// so the metrics package need not import the relay.
func userMetrics(usage func() map[string]traffic.Usage) func() map[string]metrics.UserTraffic {
	return func() map[string]metrics.UserTraffic {
		by := usage()
		out := make(map[string]metrics.UserTraffic, len(by))
		for user, u := range by {
			out[user] = metrics.UserTraffic{
				ToPeerPackets: u.ToPeerPackets, ToPeerBytes: u.ToPeerBytes,
				FromPeerPackets: u.FromPeerPackets, FromPeerBytes: u.FromPeerBytes,
				RateLimited: u.RateLimited,
			}
		}
		return out
	}
}
