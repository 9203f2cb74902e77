package main

import (
	"testing"
	"time"

	"github.com/turnd/turnd/pkg/httpapi"
)

func TestFormatStatus(t *testing.T) {
	t0 := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	serving := httpapi.Status{State: "serving", Accepting: true, Version: "v1.2.3", StartedAt: t0, UptimeSeconds: 3725,
		Allocations: httpapi.Allocations{Total: 3, ByTransport: map[string]int{"udp": 2, "tcp": 1, "tls": 0}},
		Traffic:     httpapi.Traffic{ToPeerPackets: 1200, ToPeerBytes: 1_234_567, FromPeerPackets: 1180, FromPeerBytes: 999}}
	draining := serving
	draining.State, draining.Accepting = "draining", false
	draining.Drain = &httpapi.DrainProgress{Trigger: "terminate", StartedAt: t0.Add(time.Hour),
		Deadline: t0.Add(2 * time.Hour), SecondsLeft: 3588.4}
	lameDuck := draining
	lameDuck.Accepting = true
	oldest, next, last := t0.Add(50*time.Minute), t0.Add(time.Hour+37*time.Second), t0.Add(time.Hour+10*time.Minute)
	expiring := draining
	expiring.Allocations.Oldest, expiring.Allocations.NextExpiry, expiring.Allocations.LastExpiry = &oldest, &next, &last
	expiring.Drain = &httpapi.DrainProgress{Trigger: "terminate", StartedAt: t0.Add(time.Hour),
		Deadline: t0.Add(2 * time.Hour), SecondsLeft: 3588.4, AllocationsLeft: 3, EndsBy: last}

	inFleet := serving
	inFleet.Fleet = &httpapi.FleetStatus{Node: "n1", Up: true, Held: 3, Outages: 1, OnOutage: "local"}
	fleetDown := serving
	fleetDown.Fleet = &httpapi.FleetStatus{Node: "n1", Error: "dial tcp 127.0.0.1:6379: connection refused", Held: 3,
		Outages: 2, UsageQueued: 5, OnOutage: "local"}
	fleetRefusing := serving
	fleetRefusing.Fleet = &httpapi.FleetStatus{Node: "n2", Outages: 1, UsageDropped: 7, OnOutage: "refuse"}

	tests := []struct {
		name string
		st   httpapi.Status
		want string
	}{
		{"in a fleet", inFleet, "turnd v1.2.3 at 127.0.0.1:9641: serving, accepting new allocations\n" +
			"  allocations:  3 (udp 2, tcp 1, tls 0)\n" +
			"  relayed:      to peers 1200 packets, 1.2 MB; from peers 1180 packets, 999 B\n" +
			"  fleet:        node n1, up; 3 allocations held fleet-wide; 1 outage since start\n" +
			"  up:           1h2m5s (since 2030-01-02T03:04:05Z)\n"},
		{"fleet down", fleetDown, "turnd v1.2.3 at 127.0.0.1:9641: serving, accepting new allocations\n" +
			"  allocations:  3 (udp 2, tcp 1, tls 0)\n" +
			"  relayed:      to peers 1200 packets, 1.2 MB; from peers 1180 packets, 999 B\n" +
			"  fleet:        node n1, DOWN (dial tcp 127.0.0.1:6379: connection refused), new allocations on this node's limits only (on_outage: local); 3 allocations held fleet-wide; 2 outages since start\n" +
			"                usage records: 5 waiting for Redis, 0 lost to a full queue\n" +
			"  up:           1h2m5s (since 2030-01-02T03:04:05Z)\n"},
		{"fleet down, refusing", fleetRefusing, "turnd v1.2.3 at 127.0.0.1:9641: serving, accepting new allocations\n" +
			"  allocations:  3 (udp 2, tcp 1, tls 0)\n" +
			"  relayed:      to peers 1200 packets, 1.2 MB; from peers 1180 packets, 999 B\n" +
			"  fleet:        node n2, DOWN, new allocations refused (on_outage: refuse); 0 allocations held fleet-wide; 1 outage since start\n" +
			"                usage records: 0 waiting for Redis, 7 lost to a full queue\n" +
			"  up:           1h2m5s (since 2030-01-02T03:04:05Z)\n"},
		{"serving", serving, "turnd v1.2.3 at 127.0.0.1:9641: serving, accepting new allocations\n" +
			"  allocations:  3 (udp 2, tcp 1, tls 0)\n" +
			"  relayed:      to peers 1200 packets, 1.2 MB; from peers 1180 packets, 999 B\n" +
			"  up:           1h2m5s (since 2030-01-02T03:04:05Z)\n"},
		{"draining", draining, "turnd v1.2.3 at 127.0.0.1:9641: draining (SIGTERM) for 12s, refusing new allocations\n" +
			"  drain:        3 allocations left, deadline 2030-01-02T05:04:05Z (in 59m48s)\n" +
			"  allocations:  3 (udp 2, tcp 1, tls 0)\n" +
			"  relayed:      to peers 1200 packets, 1.2 MB; from peers 1180 packets, 999 B\n" +
			"  up:           1h2m5s (since 2030-01-02T03:04:05Z)\n"},
		{"lame duck", lameDuck, "turnd v1.2.3 at 127.0.0.1:9641: draining (SIGTERM) for 12s, still accepting new allocations (lame-duck delay)\n" +
			"  drain:        3 allocations left, deadline 2030-01-02T05:04:05Z (in 59m48s)\n" +
			"  allocations:  3 (udp 2, tcp 1, tls 0)\n" +
			"  relayed:      to peers 1200 packets, 1.2 MB; from peers 1180 packets, 999 B\n" +
			"  up:           1h2m5s (since 2030-01-02T03:04:05Z)\n"},
		{"expiring", expiring, "turnd v1.2.3 at 127.0.0.1:9641: draining (SIGTERM) for 12s, refusing new allocations\n" +
			"  drain:        3 allocations left, deadline 2030-01-02T05:04:05Z (in 59m48s)\n" +
			"                ends by 2030-01-02T04:14:05Z (in 9m48s) unless an allocation is refreshed\n" +
			"  allocations:  3 (udp 2, tcp 1, tls 0)\n" +
			"                oldest made 10m12s ago; next expiry in 25s, last in 9m48s (2030-01-02T04:14:05Z) unless refreshed\n" +
			"  relayed:      to peers 1200 packets, 1.2 MB; from peers 1180 packets, 999 B\n" +
			"  up:           1h2m5s (since 2030-01-02T03:04:05Z)\n"},
	}
	now := t0.Add(time.Hour + 12*time.Second)
	for _, tt := range tests {
		if got := formatStatus(tt.st, "127.0.0.1:9641", now); got != tt.want {
			t.Errorf("%s:\n%s\nwant:\n%s", tt.name, got, tt.want)
		}
	}
}

func TestBytesSI(t *testing.T) {
	for n, want := range map[uint64]string{0: "0 B", 999: "999 B", 1000: "1.0 kB", 1_500_000: "1.5 MB", 2_000_000_000: "2.0 GB"} {
		if got := bytesSI(n); got != want {
			t.Errorf("bytesSI(%d) = %q, want %q", n, got, want)
		}
	}
}
