package main

import (
	"math/bits"
	"time"
)

// hist is a log-linear histogram of durations in microseconds: exact below
// 32 µs, then 16 buckets per power of two, so a quantile is within 1/16
// (6 %) of the true value; count, sum and max are exact. Adding is a few
// instructions and no allocation (hot path); each reader owns one and they
// are merged at the end.
type hist struct {
	counts [histBuckets]uint64
	n      uint64
	sum    time.Duration
	max    time.Duration
}

// histBuckets covers every uint64 microsecond value.
const histBuckets = 16*60 + 16

// bucketOf maps microseconds to a bucket: v itself below 32; above, the
// bucket is chosen by the top 5 significant bits and the exponent.
func bucketOf(us uint64) int {
	if us < 32 {
		return int(us)
	}
	e := bits.Len64(us) - 5
	return 16*e + int(us>>e)
}

// bucketLow is the smallest value in bucket i.
func bucketLow(i int) uint64 {
	if i < 32 {
		return uint64(i)
	}
	e := i/16 - 1
	return uint64(i-16*e) << e
}

func (h *hist) add(d time.Duration) {
	if d < 0 {
		d = 0 // a clock cannot run backwards, but stay safe
	}
	h.counts[bucketOf(uint64(d/time.Microsecond))]++
	h.n++
	h.sum += d
	h.max = max(h.max, d)
}

func (h *hist) merge(o *hist) {
	for i, c := range o.counts {
		h.counts[i] += c
	}
	h.n += o.n
	h.sum += o.sum
	h.max = max(h.max, o.max)
}

func (h *hist) mean() time.Duration {
	if h.n == 0 {
		return 0
	}
	return h.sum / time.Duration(h.n)
}

// quantile returns an upper bound of the q-quantile (0 < q <= 1): the top of
// the bucket holding it, never more than the maximum seen.
func (h *hist) quantile(q float64) time.Duration {
	if h.n == 0 {
		return 0
	}
	rank := uint64(q*float64(h.n) + 0.999999)
	rank = max(1, min(rank, h.n))
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen >= rank {
			if i+1 >= histBuckets {
				return h.max
			}
			top := time.Duration(bucketLow(i+1)) * time.Microsecond
			return min(top, h.max)
		}
	}
	return h.max
}
