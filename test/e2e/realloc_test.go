package e2e

import (
	"testing"

	"github.com/turnd/turnd/internal/testturn"
)

// TestReallocateFromSameAddress: a client that releases its allocation
// (Refresh with lifetime 0) and allocates again from the same socket must
// keep the new allocation.
//
// pion/turn v5.1.3 breaks this about once in 30 tries on loopback: closing
// the old allocation ends its relay goroutine, which then calls
// Manager.DeleteAllocation with the 5-tuple rather than with itself, and so
// deletes the new allocation of that 5-tuple if it already exists
// (internal/allocation: packetConnHandler). The client's next request then
// gets no answer at all (pion drops requests for an unknown 5-tuple instead
// of answering 437). Clients that reuse their socket across allocations
// (ICE restarts over one shared socket) hit it.
func TestReallocateFromSameAddress(t *testing.T) {
	t.Skip("known bug in pion/turn v5.1.3 (a late relay goroutine deletes the next allocation of its 5-tuple); unskip when fixed")
	cfg := testConfig()
	cfg.Log.Level = "info"
	srv := start(t, cfg)
	peer := echoPeer(t)
	c := testturn.Dial(t, "udp", srv.UDP, "demo", "demo")
	for round := 0; round < 300; round++ {
		c.MustAllocate()
		if code := c.Refresh(0); code != 0 {
			t.Fatalf("round %d: release: error %d", round, code)
		}
		relayed(t, c, peer)
		if code := c.Refresh(0); code != 0 {
			t.Fatalf("round %d: release of the second allocation: error %d", round, code)
		}
	}
}
