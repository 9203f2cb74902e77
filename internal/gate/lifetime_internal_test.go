package gate

import (
	"testing"
	"time"
)

// TestLifetimesGrant: min(asked, max), raised to the default; a Refresh
// asking for 0 keeps 0 (it deletes), an Allocate asking for 0 gets the default.
func TestLifetimesGrant(t *testing.T) {
	l := lifetimes{def: 10 * time.Minute, max: time.Hour}
	tests := []struct {
		asked   uint32
		refresh bool
		want    uint32
	}{
		{0, false, 600},
		{0, true, 0},
		{1, true, 600},
		{30, false, 600},
		{600, false, 600},
		{1200, true, 1200},
		{3600, false, 3600},
		{7200, false, 3600},
		{^uint32(0), true, 3600},
	}
	for _, tc := range tests {
		if got := l.grant(tc.asked, tc.refresh); got != tc.want {
			t.Errorf("grant(%d, refresh %v) = %d, want %d", tc.asked, tc.refresh, got, tc.want)
		}
	}
	if got := (lifetimes{}).grant(30, false); got != 30 {
		t.Errorf("no bounds: grant(30) = %d, want 30", got)
	}
}
