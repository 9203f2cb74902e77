package turn

import (
	"testing"
	"time"
)

// TestLifetimesGrant: RFC 8656 §7.2 and §8.2 — below the default: the
// default; above the cap: the cap; exactly the cap: the cap (pion gave one
// second less); a Refresh asking for 0 keeps 0 (it deletes), an Allocate
// asking for 0 or nothing gets the default.
func TestLifetimesGrant(t *testing.T) {
	p := &Policy{DefaultLifetime: 10 * time.Minute, MaxLifetime: time.Hour}
	for _, tc := range []struct {
		asked   time.Duration
		refresh bool
		want    time.Duration
	}{
		{0, false, 10 * time.Minute},
		{0, true, 0},
		{time.Second, true, 10 * time.Minute},
		{30 * time.Second, false, 10 * time.Minute},
		{10 * time.Minute, false, 10 * time.Minute},
		{20 * time.Minute, true, 20 * time.Minute},
		{time.Hour - time.Second, false, time.Hour - time.Second},
		{time.Hour, false, time.Hour},
		{time.Hour, true, time.Hour},
		{2 * time.Hour, false, time.Hour},
		{time.Duration(^uint32(0)) * time.Second, true, time.Hour},
	} {
		if got := grant(tc.asked, tc.refresh, p); got != tc.want {
			t.Errorf("grant(%v, refresh %v) = %v, want %v", tc.asked, tc.refresh, got, tc.want)
		}
	}
	if got := grant(30*time.Second, false, &Policy{}); got != 30*time.Second {
		t.Errorf("no bounds: grant(30s) = %v, want 30s", got)
	}
}
