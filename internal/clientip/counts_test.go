package clientip

import (
	"net/netip"
	"testing"
)

// TestCounts: hosts of one /48 are counted apart per /64 and together per
// network; what is removed is forgotten, down to empty maps.
func TestCounts(t *testing.T) {
	var c Counts
	a, b, other := netip.MustParseAddr("2001:db8:1:2::1"), netip.MustParseAddr("2001:db8:1:ff00::1"), netip.MustParseAddr("2001:db8:2::1")
	c.Add(a)
	c.Add(netip.MustParseAddr("2001:db8:1:2::ffff"))
	c.Add(b)
	if c.Host(a) != 2 || c.Host(b) != 1 || c.Network(a) != 3 || c.Network(b) != 3 || c.Network(other) != 0 {
		t.Fatalf("hosts %d, %d, network %d, other network %d; want 2, 1, 3, 0", c.Host(a), c.Host(b), c.Network(a), c.Network(other))
	}
	c.Remove(a)
	c.Remove(a)
	c.Remove(b)
	if len(c.host) != 0 || len(c.network) != 0 {
		t.Errorf("after every removal: %v, %v; want empty", c.host, c.network)
	}
	var zero Counts
	zero.Remove(a) // nothing counted: nothing to take back
	if zero.Host(a) != 0 || zero.Network(a) != 0 {
		t.Errorf("empty Counts: host %d network %d", zero.Host(a), zero.Network(a))
	}
}
