package server

import (
	"net/netip"
	"testing"
)

// TestAlternatesKeep: special-purpose records are dropped whatever their
// number, 100.64.0.0/10 is kept but for the metadata address inside it, and
// past 16 records of a family a sample of usable ones is kept.
func TestAlternatesKeep(t *testing.T) {
	a := newAlternates(nil, nil, nil, 0)
	var ips []netip.Addr
	for _, s := range []string{"100.100.100.200", "169.254.169.254", "0.0.0.0", "224.0.0.1", "fe80::1", "fd00:ec2::254"} {
		ips = append(ips, netip.MustParseAddr(s))
	}
	if got := a.keep(ips); len(got) != 0 {
		t.Errorf("special-purpose records kept: %v", got)
	}
	usable := map[netip.Addr]bool{}
	for i := range 40 {
		ip := netip.AddrFrom4([4]byte{100, 100, 100, byte(190 + i)}) // 100.100.100.200 among them
		ips = append(ips, ip)
		usable[ip] = ip != netip.MustParseAddr("100.100.100.200")
	}
	got := a.keep(ips)
	if len(got) != maxResolvedPerFamily {
		t.Fatalf("kept %d of 39 usable records, want %d", len(got), maxResolvedPerFamily)
	}
	for _, ip := range got {
		if !usable[ip] {
			t.Errorf("kept %v", ip)
		}
	}
}
