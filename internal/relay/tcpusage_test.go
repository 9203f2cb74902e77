package relay

import (
	"testing"
	"time"
)

// TestStreamWaitsBeforeItCharges: a stream's chunk is charged only when it
// fits the bucket's burst allowance, so a bucket a stream keeps full still
// takes the next datagram of a UDP relay sharing it; a chunk that does not
// fit is not charged at all, and its wait is until it fits.
func TestStreamWaitsBeforeItCharges(t *testing.T) {
	var b bucket
	b.bps.Store(80_000) // 10 kB/s: the allowance is 1000 bytes, 500 bytes cost 50 ms
	const now = int64(time.Hour)
	for i := range 2 {
		if wait := b.reserve(500, now); wait != 0 {
			t.Fatalf("chunk %d waits %v in a bucket with room for it", i+1, wait)
		}
	}
	full := b.tat.Load()
	if wait := b.reserve(500, now); wait != 50*time.Millisecond || b.tat.Load() != full {
		t.Fatalf("a chunk past the allowance waits %v and moved the bucket by %v; want 50ms and nothing",
			wait, time.Duration(b.tat.Load()-full))
	}
	if !b.take(100+udpHeader4, now) {
		t.Fatal("a datagram is refused by a bucket the stream keeps within its allowance")
	}
	if wait := b.reserve(500, now+int64(50*time.Millisecond)); wait == 0 {
		t.Fatal("the datagram's charge was not waited for")
	}
	// Larger than the allowance: it waits for an empty bucket, no longer.
	var slow bucket
	slow.bps.Store(8_000)
	if wait := slow.reserve(minTCPChunk, now); wait != 0 {
		t.Fatalf("a chunk costing more than the allowance waits %v on an empty bucket", wait)
	}
	if wait := slow.reserve(minTCPChunk, now); wait != time.Duration(minTCPChunk)*time.Millisecond {
		t.Fatalf("the next chunk waits %v, want until the bucket is empty", wait)
	}
}

// TestChunkAtAnyRate: a paced read or write takes what the rate lets
// through in half the burst allowance, at least minTCPChunk, at most what
// it was given, at every rate a config may hold.
func TestChunkAtAnyRate(t *testing.T) {
	p := make([]byte, 64*1024)
	for _, tc := range []struct {
		bps  int64
		want int
	}{{8_000, minTCPChunk}, {8_000_000, 50_000}, {1_000_000_000_000, len(p)}, {1 << 62, len(p)}} {
		var l limit
		l.own.bps.Store(tc.bps)
		if got := len(l.chunk(p)); got != tc.want {
			t.Errorf("at %d bit/s a chunk of %d bytes, want %d", tc.bps, got, tc.want)
		}
	}
}
