package relay

import (
	"net"
	"testing"
	"time"
)

// TestRateLimitDropsPastTheBurst: at 80 kbit/s (10 kB/s) the bucket holds
// 100 ms, 1 kB: of an instant burst of 1 kB datagrams, the first passes
// and the one that brings the debt to the allowance, and the rest are
// dropped and counted; an unlimited allocation passes everything; a new
// rate applies to the next packet.
func TestRateLimitDropsPastTheBurst(t *testing.T) {
	r := newFastPathRig(t)
	clientAP := r.client.LocalAddr().(*net.UDPAddr).AddrPort()
	pkt := channelData(0x4001, make([]byte, 1000))
	if err := r.gen.SetRate(relayAddrOf(r), 80_000); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 100; i++ {
		r.up(pkt, clientAP)
	}
	u, _ := r.gen.Usage(relayAddrOf(r))
	if u.ToPeerPackets != 2 || u.RateLimited != 98 || r.gen.Counters().DroppedToPeer.Load() != 98 {
		t.Fatalf("relayed %d, rate-limited %d, dropped in total %d; want 2, 98, 98",
			u.ToPeerPackets, u.RateLimited, r.gen.Counters().DroppedToPeer.Load())
	}
	if err := r.gen.SetRate(relayAddrOf(r), 0); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 100; i++ {
		r.up(pkt, clientAP)
	}
	if u, _ := r.gen.Usage(relayAddrOf(r)); u.ToPeerPackets != 102 {
		t.Fatalf("unlimited again: relayed %d in all, want 102", u.ToPeerPackets)
	}
}

// TestBucketRefillsAtItsRate: the bucket lets a paced flow through at its
// rate and no faster (the relay's clock is real: the test spans 300 ms).
func TestBucketRefillsAtItsRate(t *testing.T) {
	g := New(Options{})
	var b bucket
	b.bps.Store(8_000_000) // 1 MB/s: a 1 kB datagram costs 1 ms
	start := time.Now()
	passed := 0
	for time.Since(start) < 300*time.Millisecond {
		if b.allow(1000, g) {
			passed++
		}
	}
	// 300 ms at 1 MB/s, plus the 100 ms allowance, plus the first datagram.
	if elapsed := time.Since(start); passed < 300 || passed > int(elapsed/time.Millisecond)+101 {
		t.Fatalf("%d kB passed in %v, want between 300 and %d", passed, elapsed, int(elapsed/time.Millisecond)+101)
	}
}

// TestRateLimitedFastPathDoesNotAllocate: the limit keeps the fast path
// free of heap allocations, passing or dropping.
func TestRateLimitedFastPathDoesNotAllocate(t *testing.T) {
	r := newFastPathRig(t)
	clientAP := r.client.LocalAddr().(*net.UDPAddr).AddrPort()
	pkt := channelData(0x4001, make([]byte, 160))
	if err := r.gen.SetRate(relayAddrOf(r), 1_000_000); err != nil {
		t.Fatal(err)
	}
	if a := testing.AllocsPerRun(500, func() { r.up(pkt, clientAP) }); a != 0 {
		t.Errorf("rate-limited uplink: %v allocations per packet", a)
	}
	if u, _ := r.gen.Usage(relayAddrOf(r)); u.RateLimited == 0 {
		t.Fatal("no packet was dropped: the guard did not cover the drop path")
	}
}

// BenchmarkUplinkChannelDataRateLimited is BenchmarkUplinkChannelData with
// a max_bps high enough that every datagram passes: the cost of the check.
func BenchmarkUplinkChannelDataRateLimited(b *testing.B) {
	r := newFastPathRig(b)
	if err := r.gen.SetRate(relayAddrOf(r), 100_000_000_000); err != nil {
		b.Fatal(err)
	}
	clientAP := r.client.LocalAddr().(*net.UDPAddr).AddrPort()
	pkt := channelData(0x4001, make([]byte, 160))
	b.ReportAllocs()
	b.SetBytes(160)
	for b.Loop() {
		r.up(pkt, clientAP)
	}
}
