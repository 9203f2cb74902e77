package main

import (
	"testing"
	"time"
)

func TestGapTracker(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	g := newGapTracker(6)
	// Every 5 ms, then 2 and 3 lost and 4 late: a 17 ms silence after 1.
	for _, a := range []struct {
		seq uint32
		ms  int
	}{{0, 0}, {1, 5}, {4, 22}, {1, 23}, {5, 25}, {9, 26}} {
		g.arrive(a.seq, at(a.ms))
	}
	if g.received != 4 || g.duplicates != 1 {
		t.Errorf("received %d, duplicates %d; want 4 and 1 (9 is not the stream's)", g.received, g.duplicates)
	}
	if g.maxGap != 17*time.Millisecond || !g.maxGapFrom.Equal(at(5)) {
		t.Errorf("longest gap %v after %v, want 17ms after %v", g.maxGap, g.maxGapFrom, at(5))
	}
	if !g.first.Equal(at(0)) || !g.last.Equal(at(25)) {
		t.Errorf("first %v last %v", g.first, g.last)
	}
}
