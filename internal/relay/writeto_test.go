package relay

import (
	"net"
	"net/netip"
	"testing"
)

// pionUplink is a UDP relay whose Forbidden option does what the server's
// does per packet (an own-address lookup and a prefix walk), and a peer.
func pionUplink(tb testing.TB) (*Conn, *net.UDPAddr, *net.UDPAddr) {
	tb.Helper()
	own := map[netip.AddrPort]bool{netip.MustParseAddrPort("127.0.0.1:3478"): true}
	denied := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("fd00::/8")}
	g := New(Options{IPv4: net.IPv4(127, 0, 0, 1), MinPort: 20000, MaxPort: 40000,
		Forbidden: func(a netip.AddrPort) bool {
			if own[a] {
				return true
			}
			for _, p := range denied {
				if p.Contains(a.Addr()) {
					return true
				}
			}
			return false
		}})
	tb.Cleanup(g.Close)
	pc, _, err := g.AllocateUDP("udp4", 0, nil)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { pc.Close() })
	peer, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { peer.Close() })
	return pc.(*Conn), peer.LocalAddr().(*net.UDPAddr), &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 3478}
}

// TestPionUplinkDoesNotAllocate: pion's uplink (Send indications, and
// ChannelData the fast path leaves) runs Forbidden per packet; neither a
// relayed nor a refused packet may allocate.
func TestPionUplinkDoesNotAllocate(t *testing.T) {
	c, peer, own := pionUplink(t)
	payload := make([]byte, 160)
	for name, to := range map[string]*net.UDPAddr{"relayed": peer, "forbidden": own} {
		if a := testing.AllocsPerRun(200, func() { _, _ = c.WriteTo(payload, to) }); a != 0 {
			t.Errorf("%s: %.1f allocations per packet, want 0", name, a)
		}
	}
}

// BenchmarkPionUplinkWriteTo measures pion's uplink per packet, Forbidden
// included (run with -benchmem).
func BenchmarkPionUplinkWriteTo(b *testing.B) {
	c, peer, _ := pionUplink(b)
	payload := make([]byte, 160)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.WriteTo(payload, peer); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkForbidden measures the check alone, the share of it in
// BenchmarkPionUplinkWriteTo.
func BenchmarkForbidden(b *testing.B) {
	c, peer, _ := pionUplink(b)
	b.ReportAllocs()
	for b.Loop() {
		if c.relay.forbidden(peer) {
			b.Fatal("peer forbidden")
		}
	}
}
