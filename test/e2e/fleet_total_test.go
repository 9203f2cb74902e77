package e2e

import (
	"testing"

	"github.com/turnd/turnd/internal/testturn"
)

// TestFleetTotalAllocations: fleet.total_allocations caps live allocations
// across the nodes, whichever users hold them: a node holding none refuses
// past it, and admits again once another node released one.
func TestFleetTotalAllocations(t *testing.T) {
	f := newFleet(t)
	var nodes []*turnd
	for _, name := range []string{"a", "b", "c"} {
		cfg := f.config(name)
		cfg.Fleet.TotalAllocations = 2
		cfg.Auth.Users["carol"] = "c"
		nodes = append(nodes, start(t, cfg))
	}
	a, b, c := nodes[0], nodes[1], nodes[2]
	testturn.Dial(t, "udp", a.UDP, "demo", "demo").MustAllocate()
	held := testturn.Dial(t, "udp", b.UDP, "mallory", "m")
	held.MustAllocate()
	if code := allocateCode(t, c, "carol", "c"); code != 486 {
		t.Fatalf("c, the fleet at its total of 2 with none here: %d, want 486", code)
	}
	if got := c.metric(`turnd_allocations_rejected_total{reason="fleet_quota"}`); got != 1 {
		t.Errorf("c's fleet_quota rejections: %v, want 1", got)
	}
	if code := held.Refresh(0); code != 0 {
		t.Fatalf("release on b: %d", code)
	}
	eventually(t, fleetLease, "c admits once b released its allocation", func() bool {
		return allocateCode(t, c, "carol", "c") == 0
	})
}
