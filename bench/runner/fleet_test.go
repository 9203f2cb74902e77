package main

import (
	"context"
	"os/exec"
	"reflect"
	"testing"

	"github.com/turnd/turnd/pkg/config"
)

// The two turnd configs of the fleet scenario must differ only by the
// fleet section, and the fleet-on one must make every Allocate ask Redis:
// a fleet-wide limit set, the local quotas still off.
func TestFleetConfigsDifferOnlyByFleet(t *testing.T) {
	o := serverOpts{cpus: 2}
	load := func(on bool) config.Config {
		t.Helper()
		argv, err := fleetKind(on, "unix:///tmp/bench-redis.sock").argv("turnd", 3478, t.TempDir(), o)
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := config.Load(argv[len(argv)-1])
		if err != nil {
			t.Fatalf("fleet %v: turnd refuses the bench config: %v", on, err)
		}
		return cfg
	}
	off, on := load(false), load(true)
	if off.FleetOn() || !on.FleetOn() {
		t.Fatalf("FleetOn: off %v, on %v", off.FleetOn(), on.FleetOn())
	}
	if on.Fleet.Redis != "unix:///tmp/bench-redis.sock" || on.Fleet.Node != fleetNode || on.Fleet.TotalAllocations != fleetTotal {
		t.Errorf("fleet section %+v", on.Fleet)
	}
	if on.Fleet.TotalAllocations == 0 && on.Limits.UserAllocations == 0 {
		t.Error("no fleet-wide limit: turnd would skip the Redis round trip")
	}
	on.Fleet = off.Fleet
	if !reflect.DeepEqual(off, on) {
		t.Errorf("configs differ beyond fleet:\noff %+v\non  %+v", off, on)
	}
}

func TestParseCommandStats(t *testing.T) {
	info := "# Commandstats\r\ncmdstat_evalsha:calls=12,usec=90,usec_per_call=7.50,rejected_calls=0,failed_calls=0\r\n" +
		"cmdstat_eval:calls=2,usec=30\r\ncmdstat_ping:calls=1,usec=0\r\n"
	got := parseCommandStats(info)
	want := map[string]int64{"evalsha": 12, "eval": 2, "ping": 1}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("parseCommandStats = %v, want %v", got, want)
	}
	if n := scriptCalls(map[string]int64{"evalsha": 10}, got); n != 4 {
		t.Errorf("scriptCalls = %d, want 4", n)
	}
}

// The scenario's redis-server starts on its socket, answers, counts
// commands, and is stopped by PID.
func TestRedisServerStartsAndStops(t *testing.T) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Skip("redis-server not installed (make tools)")
	}
	rs, err := startRedis(context.Background(), bin, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	c0, err := rs.calls()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rs.command("PING"); err != nil {
		t.Fatal(err)
	}
	c1, err := rs.calls()
	if err != nil {
		t.Fatal(err)
	}
	if c1["ping"] != c0["ping"]+1 {
		t.Errorf("ping calls %d then %d", c0["ping"], c1["ping"])
	}
	rs.stop()
	if !rs.proc.exited() {
		t.Fatal("redis-server still runs after stop")
	}
	if _, err := rs.command("PING"); err == nil {
		t.Error("redis-server answers after stop")
	}
}
