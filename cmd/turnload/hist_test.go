package main

import (
	"testing"
	"time"
)

func TestBucketBounds(t *testing.T) {
	prev := -1
	for _, us := range []uint64{0, 1, 31, 32, 33, 47, 48, 63, 64, 1000, 1 << 20, 1<<40 + 12345, 1<<63 + 1, ^uint64(0)} {
		i := bucketOf(us)
		if i < prev {
			t.Errorf("bucket of %d is %d, below the previous %d", us, i, prev)
		}
		if i >= histBuckets {
			t.Fatalf("bucket of %d is %d, out of range", us, i)
		}
		if low := bucketLow(i); low > us || (i+1 < histBuckets && bucketLow(i+1) <= us) {
			t.Errorf("%d in bucket %d = [%d, %d)", us, i, low, bucketLow(i+1))
		}
		prev = i
	}
}

func TestHistQuantiles(t *testing.T) {
	tests := []struct {
		name    string
		samples []time.Duration
		q       float64
		low     time.Duration
		high    time.Duration
	}{
		{"empty", nil, 0.99, 0, 0},
		{"exact below 32us", []time.Duration{5 * time.Microsecond, 7 * time.Microsecond}, 1, 7 * time.Microsecond, 7 * time.Microsecond},
		{"p99 of 1..1000us", ramp(1000, time.Microsecond), 0.99, 990 * time.Microsecond, 1053 * time.Microsecond},
		{"p50 of 1..1000us", ramp(1000, time.Microsecond), 0.5, 500 * time.Microsecond, 532 * time.Microsecond},
		{"never above max", []time.Duration{1000 * time.Microsecond}, 0.99, 1000 * time.Microsecond, 1000 * time.Microsecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var h hist
			for _, d := range tt.samples {
				h.add(d)
			}
			if got := h.quantile(tt.q); got < tt.low || got > tt.high {
				t.Errorf("q%.2f = %v, want within [%v, %v]", tt.q, got, tt.low, tt.high)
			}
		})
	}
}

func TestHistMerge(t *testing.T) {
	var a, b hist
	a.add(10 * time.Microsecond)
	b.add(30 * time.Microsecond)
	b.add(-time.Second) // clamped to 0
	a.merge(&b)
	if a.n != 3 || a.max != 30*time.Microsecond || a.mean() != 40*time.Microsecond/3 {
		t.Errorf("merged: n=%d max=%v mean=%v", a.n, a.max, a.mean())
	}
}

func ramp(n int, unit time.Duration) []time.Duration {
	out := make([]time.Duration, n)
	for i := range out {
		out[i] = time.Duration(i+1) * unit
	}
	return out
}

func BenchmarkHistAdd(b *testing.B) {
	var h hist
	b.ReportAllocs()
	for i := range b.N {
		h.add(time.Duration(i%5000) * time.Microsecond)
	}
}
