package main

import (
	"math"
	"testing"
)

func TestUDPAllocationRoom(t *testing.T) {
	cases := []struct {
		name string
		soft uint64
		open int
		want int
	}{
		{"typical", 4096, 13, 4083},
		{"systemd LimitNOFILE", 1048576, 20, 1048556},
		{"full", 1024, 1024, 0},
		{"over the limit", 1024, 1030, 0}, // a limit lowered from outside (prlimit --pid)
		{"unlimited", math.MaxUint64, 10, math.MaxInt},
		{"not counted", 4096, 0, 4096},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := udpAllocationRoom(tc.soft, tc.open); got != tc.want {
				t.Fatalf("udpAllocationRoom(%d, %d) = %d, want %d", tc.soft, tc.open, got, tc.want)
			}
		})
	}
}
