package config_test

import (
	"testing"

	"github.com/turnd/turnd/pkg/config"
)

// TestPrefixCaps: a config that raised a per-IP cap past the prefix default
// still loads, and the network's cap follows the host's.
func TestPrefixCaps(t *testing.T) {
	cfg, err := config.Parse([]byte("auth: {users: {a: b}}\nlimits: {ip_allocations: 4096, connections_per_ip: 4000}\n"))
	if err != nil {
		t.Fatalf("per-IP caps above the prefix defaults: %v", err)
	}
	if a, c := cfg.Limits.PrefixCaps(); a != 4096 || c != 4000 {
		t.Errorf("prefix caps %d, %d; want 4096, 4000 (raised to the per-IP caps)", a, c)
	}
	for _, tc := range []struct{ prefix, perIP, want int }{
		{2048, 256, 2048}, {100, 256, 256}, {0, 256, 0}, {2048, 0, 2048}, {0, 0, 0},
	} {
		l := config.Limits{PrefixAllocations: tc.prefix, IPAllocations: tc.perIP,
			ConnectionsPerPrefix: tc.prefix, ConnectionsPerIP: tc.perIP}
		if a, c := l.PrefixCaps(); a != tc.want || c != tc.want {
			t.Errorf("prefix %d, per IP %d: caps %d, %d; want %d", tc.prefix, tc.perIP, a, c, tc.want)
		}
	}
}

// TestAllocateRate: the per-user Allocate rate follows the per-user quota.
func TestAllocateRate(t *testing.T) {
	for _, tc := range []struct{ rate, quota, wantRate, wantBurst int }{
		{64, 128, 64, 128},   // the defaults
		{64, 1000, 64, 1000}, // a raised quota can be used at once
		{64, 0, 0, 0},        // no quota, no rate: a user shared by every client
		{0, 128, 0, 0},
		{10, 4, 10, 20},
	} {
		l := config.Limits{UserAllocateRate: tc.rate, UserAllocations: tc.quota}
		if r, b := l.AllocateRate(); r != tc.wantRate || b != tc.wantBurst {
			t.Errorf("rate %d, quota %d: %d, burst %d; want %d, %d", tc.rate, tc.quota, r, b, tc.wantRate, tc.wantBurst)
		}
	}
}
