package ratelimit

import (
	"net/netip"
	"testing"
	"time"
)

type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func TestBurstThenRate(t *testing.T) {
	c := &clock{t: time.Unix(1000, 0)}
	l := New(10, c.now)
	a := netip.MustParseAddr("192.0.2.1")
	for i := 0; i < 20; i++ { // burst: 2 x rate
		if !l.Allow(a) {
			t.Fatalf("request %d of the burst refused", i)
		}
	}
	if l.Allow(a) {
		t.Fatal("request past the burst allowed")
	}
	if !l.Allow(netip.MustParseAddr("192.0.2.2")) {
		t.Fatal("another address was limited")
	}
	c.t = c.t.Add(100 * time.Millisecond) // one token back at 10/s
	if !l.Allow(a) || l.Allow(a) {
		t.Fatal("refill is not 10 per second")
	}
	c.t = c.t.Add(time.Hour)
	for i := 0; i < 20; i++ {
		if !l.Allow(a) {
			t.Fatal("bucket did not refill to the burst")
		}
	}
	if l.Allow(a) {
		t.Fatal("refill exceeded the burst")
	}
}

func TestChargeSpendsAndMappedIsTheSameAddress(t *testing.T) {
	c := &clock{t: time.Unix(1000, 0)}
	l := New(1, c.now)
	v4 := netip.MustParseAddr("198.51.100.7")
	l.Charge(netip.MustParseAddr("::ffff:198.51.100.7"))
	if !l.Allow(v4) || l.Allow(v4) {
		t.Fatal("a charge to the mapped form did not spend the IPv4 bucket")
	}
}

// TestIPv6SharesABucketPerSlash64: rotating addresses inside one /64 does
// not buy a fresh burst; the neighbouring /64 has its own.
func TestIPv6SharesABucketPerSlash64(t *testing.T) {
	c := &clock{t: time.Unix(1000, 0)}
	l := New(2, c.now)
	for i := 0; i < 4; i++ {
		a := netip.AddrFrom16([16]byte{0x20, 0x01, 0x0d, 0xb8, 0, 1, 0, 2, byte(i), 0, 0, 0, 0, 0, 0, byte(i + 1)})
		if !l.Allow(a) {
			t.Fatalf("request %d of the /64's burst refused", i)
		}
	}
	if l.Allow(netip.MustParseAddr("2001:db8:1:2:dead:beef::1")) {
		t.Fatal("a fifth address in the same /64 got a token past the burst")
	}
	if !l.Allow(netip.MustParseAddr("2001:db8:1:3::1")) {
		t.Fatal("the next /64 was limited")
	}
}

func TestZeroRateIsUnlimitedAndSetRateApplies(t *testing.T) {
	c := &clock{t: time.Unix(1000, 0)}
	l := New(0, c.now)
	a := netip.MustParseAddr("192.0.2.1")
	for i := 0; i < 1000; i++ {
		if !l.Allow(a) {
			t.Fatal("zero rate limited")
		}
	}
	if l.Tracked() != 0 {
		t.Fatal("zero rate kept state")
	}
	l.SetRate(1)
	l.Allow(a)
	l.Allow(a)
	if l.Allow(a) {
		t.Fatal("SetRate not applied")
	}
}

func TestMemoryIsBounded(t *testing.T) {
	c := &clock{t: time.Unix(1000, 0)}
	l := New(5, c.now)
	for i := 0; i < 200000; i++ {
		a := netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)})
		l.Allow(a)
	}
	if n := l.Tracked(); n > shards*maxPerShard {
		t.Fatalf("%d addresses tracked, bound is %d", n, shards*maxPerShard)
	}
}

func BenchmarkAllow(b *testing.B) {
	l := New(1_000_000_000, nil)
	a := netip.MustParseAddr("192.0.2.1")
	b.ReportAllocs()
	for b.Loop() {
		l.Allow(a)
	}
}
