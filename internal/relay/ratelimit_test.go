package relay

import (
	"net"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/turnd/turnd/internal/traffic"
)

// TestRateLimitDropsPastTheBurst: at 80 kbit/s (10 kB/s) the bucket holds
// 100 ms, 1 kB: of an instant burst of datagrams of 1 kB on the wire (972
// bytes and 28 of IPv4 and UDP header), the first passes and the one that
// brings the debt to the allowance, and the rest are dropped and counted;
// an unlimited allocation passes everything; a new rate applies to the
// next packet. The relay's clock is stopped: the burst is instant.
func TestRateLimitDropsPastTheBurst(t *testing.T) {
	r := newFastPathRig(t)
	r.gen.clock = func() time.Duration { return time.Hour }
	clientAP := r.client.LocalAddr().(*net.UDPAddr).AddrPort()
	pkt := channelData(0x4001, make([]byte, 1000-udpHeader4))
	if err := r.gen.SetRate(relayAddrOf(r), 80_000); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 100; i++ {
		r.up(pkt, clientAP)
	}
	u, _ := r.gen.usageAt(relayAddrOf(r))
	r.relay.route.Usage.Flush(r.gen.Counters()) // totals are published in batches
	if u.ToPeerPackets != 2 || u.RateLimited != 98 || r.gen.Counters().DroppedToPeer[traffic.RateLimited].Packets.Load() != 98 {
		t.Fatalf("relayed %d, rate-limited %d, dropped in total %d; want 2, 98, 98",
			u.ToPeerPackets, u.RateLimited, r.gen.Counters().DroppedToPeer[traffic.RateLimited].Packets.Load())
	}
	if err := r.gen.SetRate(relayAddrOf(r), 0); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 100; i++ {
		r.up(pkt, clientAP)
	}
	if u, _ := r.gen.usageAt(relayAddrOf(r)); u.ToPeerPackets != 102 {
		t.Fatalf("unlimited again: relayed %d in all, want 102", u.ToPeerPackets)
	}

	// A rate of 8 bit/s puts a 1000-byte packet 1000 s in debt; a rate
	// raised again applies at once instead of after that debt.
	if err := r.gen.SetRate(relayAddrOf(r), 8); err != nil {
		t.Fatal(err)
	}
	r.up(pkt, clientAP)
	if err := r.gen.SetRate(relayAddrOf(r), 80_000); err != nil {
		t.Fatal(err)
	}
	r.up(pkt, clientAP)
	if u, _ := r.gen.usageAt(relayAddrOf(r)); u.ToPeerPackets != 104 {
		t.Fatalf("after 8 bit/s and back to 80 kbit/s: relayed %d in all, want 104", u.ToPeerPackets)
	}
}

// TestBucketRefillsAtItsRate: the bucket lets a paced flow through at its
// rate and no faster (the relay's clock is real: the test spans 300 ms).
func TestBucketRefillsAtItsRate(t *testing.T) {
	g := New(Options{})
	var l limit
	l.own.bps.Store(8_000_000) // 1 MB/s: a 1 kB datagram costs 1 ms
	start := time.Now()
	passed := 0
	for time.Since(start) < 300*time.Millisecond {
		if l.allow(1000, g) {
			passed++
		}
	}
	// 300 ms at 1 MB/s, plus the 100 ms allowance, plus the first datagram.
	if elapsed := time.Since(start); passed < 300 || passed > int(elapsed/time.Millisecond)+101 {
		t.Fatalf("%d kB passed in %v, want between 300 and %d", passed, elapsed, int(elapsed/time.Millisecond)+101)
	}
}

// TestRateLimitedFastPathDoesNotAllocate: the limit keeps the fast path
// free of heap allocations, passing or dropping, held to the allocation's
// own rate or to its user's. AllocsPerRun rounds down, so each guard
// checks that every packet it measured took the path it guards.
func TestRateLimitedFastPathDoesNotAllocate(t *testing.T) {
	r := newFastPathRig(t)
	clientAP := r.client.LocalAddr().(*net.UDPAddr).AddrPort()
	pkt := channelData(0x4001, make([]byte, 160))
	addr := relayAddrOf(r)
	const runs = 500
	guard := func(what string, drops bool) {
		t.Helper()
		before, _ := r.gen.usageAt(addr)
		if a := testing.AllocsPerRun(runs, func() { r.up(pkt, clientAP) }); a != 0 {
			t.Errorf("%s: %v allocations per packet", what, a)
		}
		u, _ := r.gen.usageAt(addr)
		passed, dropped := u.ToPeerPackets-before.ToPeerPackets, u.RateLimited-before.RateLimited
		if want := uint64(runs + 1); drops && dropped != want || !drops && passed != want { // and the warm-up run
			t.Fatalf("%s: %d passed and %d dropped of %d: the guard did not cover one path only", what, passed, dropped, want)
		}
	}
	if err := r.gen.SetRate(addr, 100_000_000_000); err != nil {
		t.Fatal(err)
	}
	guard("uplink within max_bps", false)
	if err := r.gen.SetRate(addr, 8); err != nil {
		t.Fatal(err)
	}
	r.up(pkt, clientAP) // fits the empty bucket, and leaves it in debt past every later one
	guard("uplink past max_bps", true)

	var shared UserRate
	shared.Set(100_000_000_000)
	if err := r.gen.SetRate(addr, 0); err != nil {
		t.Fatal(err)
	}
	if err := r.gen.ShareRate(addr, &shared); err != nil {
		t.Fatal(err)
	}
	guard("uplink within the user's rate", false)
	shared.Set(8)
	r.up(pkt, clientAP)
	guard("uplink past the user's rate", true)
}

// BenchmarkUplinkChannelDataRateLimited is BenchmarkUplinkChannelData with
// a max_bps high enough that every datagram passes: the cost of the check.
func BenchmarkUplinkChannelDataRateLimited(b *testing.B) {
	r := newFastPathRig(b)
	if err := r.gen.SetRate(relayAddrOf(r), 100_000_000_000); err != nil {
		b.Fatal(err)
	}
	benchUplink(b, r.up, r.client.LocalAddr().(*net.UDPAddr).AddrPort())
}

// TestEachDatagramPaysItsHeader: at 80 kbit/s the bucket holds 1000 bytes
// on the wire, so of an instant burst of 1-byte ChannelData (the relay's
// clock stopped) it lets through 1000/(1+28) over IPv4 and 1000/(1+48)
// over IPv6, and the first: a flood of tiny datagrams is held like a flood
// of bytes.
func TestEachDatagramPaysItsHeader(t *testing.T) {
	for _, tc := range []struct {
		network string
		ip      net.IP
		want    uint64
	}{{"udp4", net.IPv4(127, 0, 0, 1), 1000/(1+28) + 1}, {"udp6", net.IPv6loopback, 1000/(1+48) + 1}} {
		t.Run(tc.network, func(t *testing.T) {
			r := newFastPathRigOn(t, tc.network, tc.ip)
			r.gen.clock = func() time.Duration { return time.Hour }
			clientAP := r.client.LocalAddr().(*net.UDPAddr).AddrPort()
			if err := r.gen.SetRate(relayAddrOf(r), 80_000); err != nil {
				t.Fatal(err)
			}
			pkt := channelData(0x4001, []byte{1})
			for range 200 {
				r.up(pkt, clientAP)
			}
			if u, _ := r.gen.usageAt(relayAddrOf(r)); u.ToPeerPackets != tc.want || u.RateLimited+u.ToPeerPackets != 200 {
				t.Fatalf("relayed %d, rate-limited %d of 200; want %d relayed", u.ToPeerPackets, u.RateLimited, tc.want)
			}
		})
	}
}

// TestUnsentDatagramsAreNotCharged: datagrams the kernel refuses (here to
// port 0) are counted as send errors and give their charge back, so the
// allocation's rate is left whole for what can be relayed.
func TestUnsentDatagramsAreNotCharged(t *testing.T) {
	r := newFastPathRig(t)
	clientAP := r.client.LocalAddr().(*net.UDPAddr).AddrPort()
	if err := r.gen.bindAt(relayAddrOf(r), &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 0}, 0x4002, false); err != nil {
		t.Fatal(err)
	}
	if err := r.gen.SetRate(relayAddrOf(r), 80_000); err != nil {
		t.Fatal(err)
	}
	payload := make([]byte, 1000-udpHeader4)
	for range 50 {
		r.up(channelData(0x4002, payload), clientAP)
	}
	for range 2 {
		r.up(channelData(0x4001, payload), clientAP)
	}
	u, _ := r.gen.usageAt(relayAddrOf(r))
	if d := r.gen.Counters().DroppedToPeer[traffic.SendError].Packets.Load(); d != 50 || u.ToPeerPackets != 2 || u.RateLimited != 0 {
		t.Fatalf("%d send errors, %d relayed, %d rate-limited; want 50, 2, 0", d, u.ToPeerPackets, u.RateLimited)
	}
}

// TestRateLimitedDownlinkDoesNotAllocate: with a limit on, the downlink
// loop relays and drops (past the rate, or from a peer without a
// permission) without heap allocations.
func TestRateLimitedDownlinkDoesNotAllocate(t *testing.T) {
	r := newFastPathRig(t)
	if err := r.gen.SetRate(relayAddrOf(r), 100_000_000_000); err != nil {
		t.Fatal(err)
	}
	stranger := listenLoopback(t, "udp4", "127.0.0.2")
	relayAP := r.relay.LocalAddr().(*net.UDPAddr).AddrPort()
	payload := make([]byte, 160)
	buf := make([]byte, 1600)
	_ = r.client.SetReadDeadline(time.Now().Add(10 * time.Second))
	const batch = 50
	allocs := testing.AllocsPerRun(10, func() {
		for range batch {
			if _, err := stranger.WriteToUDPAddrPort(payload, relayAP); err != nil {
				t.Fatal(err)
			}
			if _, err := r.peer.WriteToUDPAddrPort(payload, relayAP); err != nil {
				t.Fatal(err)
			}
			if n, err := r.client.Read(buf); err != nil || n != 4+len(payload) {
				t.Fatalf("client read %d bytes: %v", n, err)
			}
		}
	})
	if perPacket := allocs / batch; perPacket >= 0.1 {
		t.Errorf("rate-limited downlink: %.2f allocations per packet", perPacket)
	}
	if u, _ := r.gen.usageAt(relayAddrOf(r)); u.NoPermission == 0 {
		t.Fatal("no junk was dropped: the guard did not cover the drop path")
	}
	// Now past the rate, and the bucket in debt: every datagram measured
	// is dropped in the loop.
	if err := r.gen.SetRate(relayAddrOf(r), 8); err != nil {
		t.Fatal(err)
	}
	if _, err := r.peer.WriteToUDPAddrPort(payload, relayAP); err != nil {
		t.Fatal(err)
	}
	if n, err := r.client.Read(buf); err != nil || n != 4+len(payload) {
		t.Fatalf("client read %d bytes: %v", n, err)
	}
	drained, _ := r.gen.usageAt(relayAddrOf(r))
	allocs = testing.AllocsPerRun(10, func() {
		before, _ := r.gen.usageAt(relayAddrOf(r))
		for range batch {
			if _, err := r.peer.WriteToUDPAddrPort(payload, relayAP); err != nil {
				t.Fatal(err)
			}
		}
		// A marker through a second allocation's loop would not prove
		// this socket was read; the count of drops does, bounded.
		for deadline := time.Now().Add(5 * time.Second); ; runtime.Gosched() {
			if u, _ := r.gen.usageAt(relayAddrOf(r)); u.RateLimited >= before.RateLimited+batch {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("the loop did not drop %d datagrams within 5 s", batch)
			}
		}
	})
	if perPacket := allocs / batch; perPacket >= 0.1 {
		t.Errorf("downlink past the rate: %.2f allocations per packet", perPacket)
	}
	if u, _ := r.gen.usageAt(relayAddrOf(r)); u.FromPeerPackets != drained.FromPeerPackets {
		t.Fatalf("%d datagrams passed a drained bucket: the guard did not cover the drop path only", u.FromPeerPackets-drained.FromPeerPackets)
	}
}

// BenchmarkDownlinkChannelDataRateLimited is BenchmarkDownlinkChannelData
// with a rate high enough that every datagram passes: what checking
// limits.max_bps costs on the downlink.
func BenchmarkDownlinkChannelDataRateLimited(b *testing.B) {
	benchDownlinkChannelData(b, 100_000_000_000)
}

// BenchmarkUplinkSharedUserRate runs one allocation per CPU, all of one
// user, in parallel: off, each held to its own rate, and drawing on one
// shared user rate as well (limits.user_total_bps), whose bucket is the
// one cache line they all write. Every datagram passes.
func BenchmarkUplinkSharedUserRate(b *testing.B) {
	for _, mode := range []string{"off", "own", "shared"} {
		b.Run(mode, func(b *testing.B) {
			var shared UserRate
			shared.Set(100_000_000_000)
			rigs := make([]*fastPathRig, runtime.GOMAXPROCS(0))
			for i := range rigs {
				rigs[i] = newFastPathRig(b)
				if mode != "off" {
					if err := rigs[i].gen.SetRate(relayAddrOf(rigs[i]), 100_000_000_000); err != nil {
						b.Fatal(err)
					}
				}
				if mode == "shared" {
					if err := rigs[i].gen.ShareRate(relayAddrOf(rigs[i]), &shared); err != nil {
						b.Fatal(err)
					}
				}
			}
			pkt := channelData(0x4001, make([]byte, 160))
			var next atomic.Int32
			b.ReportAllocs()
			b.SetBytes(160)
			b.ResetTimer() // the rigs' set-up is not the relay's per-packet cost
			b.RunParallel(func(pb *testing.PB) {
				r := rigs[int(next.Add(1)-1)%len(rigs)]
				clientAP := r.client.LocalAddr().(*net.UDPAddr).AddrPort()
				for pb.Next() {
					r.up(pkt, clientAP)
				}
			})
		})
	}
}

// BenchmarkLimitAllow is the rate check alone, without a socket: off, the
// allocation's own rate, and its user's shared rate as well.
func BenchmarkLimitAllow(b *testing.B) {
	g := New(Options{})
	for _, mode := range []string{"off", "own", "shared"} {
		b.Run(mode, func(b *testing.B) {
			var l limit
			var u UserRate
			if mode != "off" {
				l.own.bps.Store(100_000_000_000_000)
			}
			if mode == "shared" {
				u.Set(100_000_000_000_000)
				l.user.Store(&u.to)
			}
			b.ReportAllocs()
			for b.Loop() {
				if !l.allow(160+udpHeader4, g) {
					b.Fatal("refused")
				}
			}
		})
	}
}

// TestClosedSocketIsNotCharged: a datagram the fast path takes as its
// socket closes is not sent, so its charge is given back, as WriteTo does.
func TestClosedSocketIsNotCharged(t *testing.T) {
	r := newFastPathRig(t)
	r.gen.clock = func() time.Duration { return time.Hour }
	if err := r.gen.SetRate(relayAddrOf(r), 80_000); err != nil {
		t.Fatal(err)
	}
	peer := r.peer.LocalAddr().(*net.UDPAddr).AddrPort()
	if err := r.relay.Close(); err != nil {
		t.Fatal(err)
	}
	r.relay.relayUp(make([]byte, 100), peer)
	if debt := time.Duration(r.relay.toRate.own.tat.Load()) - time.Hour; debt > 0 {
		t.Fatalf("a datagram a closed socket did not send was charged %v", debt)
	}
}
