package main

import (
	"testing"
	"time"
)

// TestOtherCPU: other work is the growth of every process but the excluded
// ones, plus all of a process that started during the row; a process that
// exited (a load tool) or whose counter did not grow adds nothing.
func TestOtherCPU(t *testing.T) {
	ms := time.Millisecond
	before := map[int]time.Duration{10: 100 * ms, 11: 50 * ms, 12: 70 * ms, 13: 5 * ms}
	after := map[int]time.Duration{
		10: 400 * ms, // the server: excluded
		11: 80 * ms,  // another program: +30
		12: 70 * ms,  // idle: +0
		14: 20 * ms,  // started during the row: +20
		15: 9 * ms,   // the runner: excluded
	}
	if got := otherCPU(before, after, 10, 15); got != 50*ms {
		t.Fatalf("otherCPU = %v, want 50ms", got)
	}
	if got := otherCPU(before, before); got != 0 {
		t.Fatalf("no change: otherCPU = %v", got)
	}
}

// TestMedianRow: repeated runs give the row of the median run, with every
// run's figure kept as a sample.
func TestMedianRow(t *testing.T) {
	rows := []Row{{CPUPerPacketUS: 7, Server: "c"}, {CPUPerPacketUS: 5, Server: "a"}, {CPUPerPacketUS: 6, Server: "b"}}
	row := medianRow(rows, func(r Row) float64 { return r.CPUPerPacketUS })
	if row.Server != "b" || len(row.Samples) != 3 || row.Samples[0] != 5 || row.Samples[2] != 7 {
		t.Fatalf("median row %q with samples %v, want b with [5 6 7]", row.Server, row.Samples)
	}
}
