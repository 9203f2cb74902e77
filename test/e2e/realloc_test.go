package e2e

import (
	"testing"

	"github.com/turnd/turnd/internal/testturn"
)

// TestReallocateFromSameAddress: a client that releases its allocation
// (Refresh with lifetime 0) and allocates again from the same socket or
// connection must keep the new allocation.
//
// pion/turn v5.1.3 alone breaks this about once in 30 tries on loopback:
// closing the old allocation ends its relay goroutine, which then calls
// Manager.DeleteAllocation with the 5-tuple rather than with itself, and so
// deletes the new allocation of that 5-tuple if it already exists. The
// client's next request then gets 437. Clients that reuse their socket
// across allocations (ICE restarts over one shared socket) hit it. turnd
// retires the old allocation's key first (internal/relay/retire.go).
func TestReallocateFromSameAddress(t *testing.T) {
	cfg := testConfig()
	cfg.Log.Level = "info"
	cfg.Limits.UserAllocateRate = 0 // 600 Allocates as fast as one client can
	srv := start(t, cfg)
	peer := echoPeer(t)
	for _, network := range []string{"udp", "tcp"} {
		t.Run(network, func(t *testing.T) {
			addr := srv.UDP
			if network == "tcp" {
				addr = srv.TCP
			}
			c := testturn.Dial(t, network, addr, "demo", "demo")
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
		})
	}
}
