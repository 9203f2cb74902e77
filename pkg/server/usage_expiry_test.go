//go:build !race

package server_test

import (
	"testing"
	"time"

	"github.com/turnd/turnd/pkg/server"
)

// TestUsageRecordOfAnExpiredAllocation runs without the race detector
// only: after an expiry, the relay's retirement (relay/retire.go) writes
// the client address object that pion read, unsynchronised, when it
// answered the Allocate long before, and the detector reports that pair.
func TestUsageRecordOfAnExpiredAllocation(t *testing.T) {
	opts := testOptions()
	opts.Config.Limits.MaxLifetime = time.Second
	records := usageLog(&opts)
	s := start(t, opts)
	dial(t, s, "udp").MustAllocate()
	wantFields(t, nextRecord(t, records), map[string]any{"reason": server.EndExpired, "transport": "udp"})
}
