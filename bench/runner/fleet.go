package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"time"

	"github.com/turnd/turnd/bench/procstat"
)

// The fleet scenario: turnd with fleet off, then on (a redis-server the
// scenario starts on a unix socket), each under relay-40k's load and
// alloc-burst's, plus a serial Allocate run for the latency of one
// Allocate on an otherwise idle server. coturn has no fleet.
const (
	fleetNode = "bench"
	// fleetTotal is fleet.total_allocations with fleet on: far above any
	// load here, so nothing is refused, but every Allocate then makes its
	// one Redis round trip (with no limit set turnd skips it).
	fleetTotal    = 1000000
	serialClients = "2000"
	// fleetBudget bounds the whole scenario: per turnd a warm-up, three
	// relay runs, a serial run and three bursts (about 50 s on a quiet
	// machine), a wait for quiet, and a second attempt if disturbed.
	fleetBudget = 8 * time.Minute
)

// serverFleet and serverNoFleet name the scenario's two turnd rows.
const (
	serverNoFleet = "turnd"
	serverFleet   = "turnd-fleet"
)

// FleetRow is the fleet scenario's own figures for one turnd. The row's
// relay figures (CPU per packet, loss, RTT) are the median relay run's,
// its AllocPerSec the median burst's.
type FleetRow struct {
	Fleet bool `json:"fleet"`
	// RelaySamplesUS is server CPU µs per relayed packet of each relay-40k run.
	RelaySamplesUS []float64 `json:"relay_samples_us"`
	// AllocSamples is allocations/s of each burst.
	AllocSamples []float64 `json:"alloc_samples"`
	// BurstP50Ms, BurstP99Ms: one allocation's latency (401, signed
	// Allocate, 200) in the median burst, 100 clients at once.
	BurstP50Ms float64 `json:"burst_p50_ms"`
	BurstP99Ms float64 `json:"burst_p99_ms"`
	// SerialP50Ms, SerialP99Ms, SerialMaxMs: the same, one client at a time.
	SerialP50Ms       float64 `json:"serial_p50_ms"`
	SerialP99Ms       float64 `json:"serial_p99_ms"`
	SerialMaxMs       float64 `json:"serial_max_ms"`
	SerialPerSec      float64 `json:"serial_per_s"`
	BurstAllocations  int     `json:"burst_allocations"`  // successful, every burst
	BurstServerCPUSec float64 `json:"burst_server_cpu_s"` // turnd, every burst
	// Redis over every burst: its CPU, and the Lua scripts it ran (Admit
	// and the queued Hold/Release deltas, heartbeats).
	BurstRedisCPUSec float64 `json:"burst_redis_cpu_s,omitempty"`
	BurstRedisScript int64   `json:"burst_redis_scripts,omitempty"`
	// RedisCPUSec is redis-server's CPU over the whole row.
	RedisCPUSec float64 `json:"redis_cpu_s,omitempty"`
}

func fleetScenario() scenario {
	return scenario{name: "fleet", rows: runFleet,
		command: fmt.Sprintf("turnd with fleet off, then on (redis-server on a unix socket, fleet.total_allocations %d): %s x%d (median) after a 1 s warm-up; turnload alloc --clients %s --concurrency 1; turnload alloc --clients %s --concurrency 100 x%d (median)",
			fleetTotal, relayCommand(), repeats, serialClients, burstClients, repeats)}
}

func relayCommand() string {
	return fmt.Sprintf("turnload relay --clients %s --rate %d --duration %v", loadClients, rate40k, duration40k)
}

// runFleet starts redis-server, measures turnd without and with fleet, and
// stops redis-server by PID.
func runFleet(ctx context.Context, e *env, dir string) []Row {
	ctx, cancel := context.WithTimeout(ctx, fleetBudget)
	defer cancel()
	sc := fleetScenario()
	fail := func(err error) []Row {
		fmt.Fprintf(e.log, "bench:   fleet: %v\n", err)
		return []Row{{Scenario: sc.name, Server: serverNoFleet, Command: sc.command, Error: err.Error()},
			{Scenario: sc.name, Server: serverFleet, Command: sc.command, Error: err.Error()}}
	}
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return fail(fmt.Errorf("redis-server (Debian's redis-server package, make tools): %w", err))
	}
	rdir := filepath.Join(dir, "redis")
	if err := os.MkdirAll(rdir, 0o700); err != nil {
		return fail(fmt.Errorf("make redis directory: %w", err))
	}
	rs, err := startRedis(ctx, bin, rdir)
	if err != nil {
		return fail(err)
	}
	defer rs.stop()
	// Redis's own CPU is the scenario's, not other work: runOne must not
	// measure a row again because of it.
	fe := *e
	fe.ownPIDs = append(append([]int{}, e.ownPIDs...), rs.proc.pid())
	var rows []Row
	for _, on := range []bool{false, true} {
		kind := fleetKind(on, rs.url())
		fs := sc
		fs.cpuSensitive = true
		fs.run = func(ctx context.Context, e *env, s *server) (Row, error) { return fleetRun(ctx, e, s, rs, on) }
		rows = append(rows, runOne(ctx, &fe, fs, kind, e.turnd, dir))
		if ctx.Err() != nil {
			break
		}
	}
	return rows
}

// fleetKind is turnd with the benchmark's config, and with fleet on its
// fleet section too.
func fleetKind(on bool, redisURL string) serverKind {
	k := serverKinds()[0]
	if !on {
		k.name = serverNoFleet
		return k
	}
	k.name = serverFleet
	k.argv = func(bin string, port int, dir string, o serverOpts) ([]string, error) {
		argv, err := turndArgv(bin, port, dir, o)
		if err != nil {
			return nil, err
		}
		cfg := argv[len(argv)-1]
		f, err := os.OpenFile(cfg, os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			return nil, fmt.Errorf("open turnd config: %w", err)
		}
		defer f.Close()
		if _, err := f.WriteString(fleetSection(redisURL)); err != nil {
			return nil, fmt.Errorf("write turnd config: %w", err)
		}
		return argv, nil
	}
	return k
}

// fleetSection is what fleet on adds to turndConfig: every other key at
// its default (lease 10s, timeout 250ms, on_outage local).
func fleetSection(redisURL string) string {
	return fmt.Sprintf("fleet:\n  redis: %q\n  node: %s\n  total_allocations: %d\n", redisURL, fleetNode, fleetTotal)
}

// fleetRun is one turnd's part: relay-40k's runs, a serial Allocate run,
// then the bursts.
func fleetRun(ctx context.Context, e *env, s *server, rs *redisServer, on bool) (Row, error) {
	redis0, _ := procstat.Read(rs.proc.pid())
	fr := &FleetRow{Fleet: on}
	row, err := relay40k(ctx, e, s)
	if err != nil {
		return row, err
	}
	fr.RelaySamplesUS, row.Samples = row.Samples, nil
	rep, err := runTurnload(ctx, e, s, 0, "alloc", "--clients", serialClients, "--concurrency", "1")
	if err != nil {
		return row, err
	}
	if a := rep.Alloc; a != nil {
		fr.SerialP50Ms, fr.SerialP99Ms, fr.SerialMaxMs, fr.SerialPerSec = a.LatencyP50Ms, a.LatencyP99Ms, a.LatencyMaxMs, a.PerSecond
	}
	calls0, err := rs.calls()
	if err != nil {
		return row, err
	}
	burst0, _ := procstat.Read(rs.proc.pid())
	var bursts []*loadReport
	for range repeats {
		rep, err := runTurnload(ctx, e, s, 0, "alloc", "--clients", burstClients, "--concurrency", "100")
		if err != nil {
			return row, err
		}
		if rep.Alloc == nil {
			return row, fmt.Errorf("turnload alloc reported no alloc section: %w", errParse)
		}
		bursts = append(bursts, rep)
		fr.AllocSamples = append(fr.AllocSamples, rep.Alloc.PerSecond)
		fr.BurstAllocations += rep.Setup.OK
		fr.BurstServerCPUSec += rep.Process.CPUSeconds
		row.FailedAllocs += rep.Setup.Failed
	}
	burst1, _ := procstat.Read(rs.proc.pid())
	calls1, err := rs.calls()
	if err != nil {
		return row, err
	}
	if on {
		fr.BurstRedisCPUSec = (burst1.CPU - burst0.CPU).Seconds()
		fr.BurstRedisScript = scriptCalls(calls0, calls1)
		fr.RedisCPUSec = (burst1.CPU - redis0.CPU).Seconds()
	}
	med := medianReport(bursts)
	row.AllocPerSec = med.Alloc.PerSecond
	row.CPUPerAllocUS = med.Alloc.ServerCPUPerUS
	fr.BurstP50Ms, fr.BurstP99Ms = med.Alloc.LatencyP50Ms, med.Alloc.LatencyP99Ms
	row.Fleet = fr
	if on && fr.BurstRedisScript < int64(fr.BurstAllocations) {
		return row, fmt.Errorf("redis ran %d scripts for %d allocations: not every Allocate asked the fleet: %w",
			fr.BurstRedisScript, fr.BurstAllocations, errParse)
	}
	return row, nil
}

// medianReport is the burst with the median rate.
func medianReport(reps []*loadReport) *loadReport {
	s := slices.Clone(reps)
	slices.SortFunc(s, func(a, b *loadReport) int { return cmpFloat(a.Alloc.PerSecond, b.Alloc.PerSecond) })
	return s[len(s)/2]
}

// fleetOverhead is a fleet-on figure over the fleet-off one (0 when
// either is missing).
func fleetOverhead(rows []Row, get func(Row) float64) float64 {
	off, ok1 := rowOf(rows, "fleet", serverNoFleet)
	on, ok2 := rowOf(rows, "fleet", serverFleet)
	if !ok1 || !ok2 || get(off) == 0 {
		return 0
	}
	return get(on) / get(off)
}
