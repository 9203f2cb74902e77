package allocation

import (
	"errors"
	"net/netip"
	"testing"
	"time"
)

// TestPermitPastTheCapIsCheap: one CreatePermission can carry thousands
// of XOR-PEER-ADDRESSes (a 64 kB datagram holds 5 000); past the cap it is
// refused after counting the cap's worth of new peers, not after comparing
// every peer with every other (quadratic: seconds of CPU for one request
// of an authenticated client). The bound is generous: the quadratic count
// of these 65 536 peers takes over a second, the linear one microseconds.
func TestPermitPastTheCapIsCheap(t *testing.T) {
	_, hooks := newEvents()
	tab := New(Limits{}, hooks)
	a := insert(t, tab, "a", tuple(1), v4(1), time.Hour)
	peers := make([]netip.Addr, 1<<16)
	for i := range peers {
		peers[i] = netip.AddrFrom4([4]byte{10, 1, byte(i >> 8), byte(i)})
	}
	start := time.Now()
	err := tab.Permit(a, peers, t0, 64)
	if took := time.Since(start); took > 250*time.Millisecond {
		t.Errorf("Permit of %d peers past a cap of 64 took %v", len(peers), took)
	}
	if !errors.Is(err, ErrPermissionQuota) {
		t.Fatalf("Permit past the cap: %v, want ErrPermissionQuota", err)
	}
}
