package main

import "time"

// gapTracker follows one stream's arrivals: how many distinct messages
// came back and the longest silence between two consecutive arrivals,
// which is how a pause of the server (a switch of processes) shows.
type gapTracker struct {
	seen       []bool // by sequence number
	received   uint64 // distinct messages
	duplicates uint64
	first      time.Time
	last       time.Time
	maxGap     time.Duration
	maxGapFrom time.Time // the arrival the longest silence followed
}

func newGapTracker(messages int) *gapTracker { return &gapTracker{seen: make([]bool, messages)} }

// arrive records message seq arriving at at; arrivals come in the order
// they were read.
func (g *gapTracker) arrive(seq uint32, at time.Time) {
	if int(seq) >= len(g.seen) {
		return // not one of this stream's
	}
	if g.seen[seq] {
		g.duplicates++
		return
	}
	g.seen[seq] = true
	g.received++
	if g.last.IsZero() {
		g.first = at
	} else if d := at.Sub(g.last); d > g.maxGap {
		g.maxGap, g.maxGapFrom = d, g.last
	}
	g.last = at
}
