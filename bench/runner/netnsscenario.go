package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

// The netns scenario's bounds: the whole scenario (three servers, the
// topology) and each server's share of it, its quiet wait included.
const (
	netnsBudget      = 215 * time.Second
	netnsServerSlice = 55 * time.Second
	netnsQuietWait   = 5 * time.Second
	// netnsStepReserve is how much of a server's slice a later ramp step
	// needs (2.6 s of allocations, about 3 s of sending, the tail).
	netnsStepReserve = 12 * time.Second
)

const (
	kernelRelayedMetric = "turnd_kernel_relayed_packets_total"
	relayedMetric       = "turnd_relayed_packets_total"
)

func netnsScenario() scenario {
	return scenario{name: "netns", rows: runNetns,
		command: fmt.Sprintf("K x (ip netns exec CLIENT turnutils_uclient -u demo -w demo -e %s -r %d -X -c -m 26 -n N -l 100 -z 2 -p %d %s)   # K x N = 2 x 1000 (reference load), then 4 x 500, 8 x 250, 12 x 170, 16 x 125 until a step loses a message",
			peerIP, netnsPeerPort, netnsPort, turndClientIP)}
}

// runNetns runs the scenario on its three servers in one topology, and
// always removes the topology.
func runNetns(ctx context.Context, e *env, dir string) []Row {
	ctx, cancel := context.WithTimeout(ctx, netnsBudget)
	defer cancel()
	sc := netnsScenario()
	rows := make([]Row, 0, 3)
	for _, k := range netnsKinds() {
		rows = append(rows, Row{Scenario: sc.name, Server: k.name, Command: sc.command, Netns: &NetnsRow{Offload: k.offload}})
	}
	fail := func(err error) []Row {
		fmt.Fprintf(e.log, "bench:   netns: %v\n", err)
		for i := range rows {
			rows[i].Error = err.Error()
		}
		return rows
	}
	if stale := removeStaleTopologies(); len(stale) > 0 {
		fmt.Fprintf(e.log, "bench:   removed namespaces of an earlier run: %v\n", stale)
	}
	topo := newTopology(os.Getpid())
	if err := topo.create(ctx); err != nil {
		return fail(err)
	}
	defer topo.remove()
	load := netnsLoad{uclient: e.uclient, toolErr: e.toolErr, topo: topo}
	for _, d := range []struct {
		ns, dev string
		server  bool
	}{{topo.client, topo.c, false}, {topo.peer, topo.p, false}, {topo.turnd, topo.t, true}, {topo.turnd, topo.u, true}} {
		pid, err := threadedNAPI(ctx, d.ns, d.dev)
		if err != nil {
			return fail(err)
		}
		if d.server {
			load.srvNAPI = append(load.srvNAPI, pid)
		} else {
			load.loadNAPI = append(load.loadNAPI, pid)
		}
	}
	peer, err := start("netns-peer", filepath.Join(dir, "netns-peer.out"),
		"ip", "netns", "exec", topo.peer, e.peerBin, "-L", peerIP, "-p", strconv.Itoa(netnsPeerPort))
	if err != nil {
		return fail(err)
	}
	// The peer must be gone before its namespace is deleted (defers run
	// last in, first out).
	defer peer.stop(syscall.SIGTERM)
	load.peerPID = peer.pid()
	for i, k := range netnsKinds() {
		netnsServerRow(ctx, e, load, k, dir, &rows[i])
		if peer.exited() {
			return fail(errors.New("turnutils_peer exited (see netns-peer.out)"))
		}
	}
	if c := rows[0].Netns; len(c.Steps) > 0 {
		for i := range rows {
			if n := rows[i].Netns; len(n.Steps) > 0 {
				n.ServerShareRatio = ratio(n.Steps[0].ServerUS, c.Steps[0].ServerUS)
			}
		}
	}
	return rows
}

// netnsServerRow runs the ramp on a fresh server of kind k and fills row.
func netnsServerRow(ctx context.Context, e *env, load netnsLoad, k netnsKind, dir string, row *Row) {
	t0 := time.Now()
	defer func() { row.Seconds = time.Since(t0).Seconds() }()
	if ctx.Err() != nil {
		row.Error = "not run: the scenario's time ran out"
		return
	}
	fmt.Fprintf(e.log, "bench: netns on %s\n", k.name)
	deadline := t0.Add(netnsServerSlice)
	row.BusyBeforeCPUs = waitQuiet(ctx, e, netnsQuietWait)
	srv, err := startNetnsServer(load.topo, k, map[string]string{"turnd": e.turnd, "coturn": e.coturn}, dir, e.opts.cpus)
	var ua errUnavailable
	if errors.As(err, &ua) {
		row.Netns.Unavailable = ua.reason
		row.Notes = append(row.Notes, ua.Error())
		fmt.Fprintf(e.log, "bench:   %v\n", ua)
		return
	}
	if err != nil {
		row.Error = err.Error()
		return
	}
	defer srv.stop()
	load.srv, load.steps = srv, new(int)
	n := row.Netns
	ramp := netnsRamp()
	ref := referenceLoad(ctx, e, load, k, ramp[0], deadline, row)
	n.Steps = append(n.Steps, ref)
	for _, st := range ramp[1:] {
		if k.maxBPS > 0 {
			break // the reference load is what this row is for
		}
		if !n.Steps[len(n.Steps)-1].LossFree || srv.proc.exited() || ctx.Err() != nil {
			break
		}
		if time.Until(deadline) < netnsStepReserve {
			row.Notes = append(row.Notes, fmt.Sprintf("ramp stopped before %d uclients: the server's time ran out", st.processes))
			break
		}
		n.Steps = append(n.Steps, runLoggedStep(ctx, e, load, st))
	}
	n.LossFreeRate, n.LossFreeOpen = lossFreeMax(n.Steps)
	row.OfferedRate, row.DeliveredRate = ref.OfferedRate, ref.Delivered
	if ref.Sent > 0 {
		row.LossPct = float64(ref.Lost) * 100 / float64(ref.Sent)
	}
	row.RelayedPackets = ref.relayed()
	row.ServerCPUSeconds = ref.CPU.ServerProc
	row.CPUPerPacketUS = ref.ServerUS
	row.ClientCPUSeconds = ref.CPU.LoadGen
	row.OtherCPUSeconds = ref.CPU.Other
	if ref.Error != "" {
		row.Error = "reference load: " + ref.Error
	}
	if d := ref.otherCPUs(); d > disturbedCPUs {
		row.Notes = append(row.Notes, fmt.Sprintf("reference load disturbed: other work used %.2f CPUs", d))
	}
	if len(n.Steps) > 1 && n.Steps[len(n.Steps)-1].Error != "" {
		row.Notes = append(row.Notes, "last ramp step: "+n.Steps[len(n.Steps)-1].Error)
	}
	if s, err := srv.sample(); err == nil {
		row.PeakRSSKB = s.HWMKB
	}
	if srv.proc.exited() {
		row.Error = fmt.Sprintf("%s exited during the scenario (see %s.out)", k.name, k.name)
	}
}

// referenceLoad runs the ramp's first step, the one every server's CPU is
// compared at, with the kernel path's counters around it. Other work is
// taken out of the server's share, but the kernel work it causes (its
// interrupts, kworkers) stays in; so a disturbed run is measured once more
// if the server's time allows, and the less disturbed one is kept.
func referenceLoad(ctx context.Context, e *env, load netnsLoad, k netnsKind, st rampStep, deadline time.Time, row *Row) NetnsStep {
	var best NetnsStep
	for attempt := 1; attempt <= 2; attempt++ {
		var before map[string]float64
		var err error
		if k.offload != "" {
			if before, err = scrapeNetns(load.topo, kernelRelayedMetric, relayedMetric); err != nil {
				row.Notes = append(row.Notes, err.Error())
			}
		}
		step := runLoggedStep(ctx, e, load, st)
		if before != nil {
			if after, err := scrapeNetns(load.topo, kernelRelayedMetric, relayedMetric); err != nil {
				row.Notes = append(row.Notes, err.Error())
			} else {
				step.kernel = after[kernelRelayedMetric] - before[kernelRelayedMetric]
				step.relayedMetric = after[relayedMetric] - before[relayedMetric]
			}
		}
		if attempt == 2 {
			kept := "the first"
			if keepReference(best, step) {
				kept = "the second"
			}
			row.Notes = append(row.Notes, fmt.Sprintf("reference load measured again: other work used %.2f CPUs, then %.2f; kept %s",
				best.otherCPUs(), step.otherCPUs(), kept))
		}
		if attempt == 1 || keepReference(best, step) {
			best = step
		}
		if step.Error != "" || step.otherCPUs() <= disturbedCPUs || time.Until(deadline) < 2*netnsStepReserve || ctx.Err() != nil {
			break
		}
	}
	n := row.Netns
	n.KernelRelayed, n.RelayedMetric = best.kernel, best.relayedMetric
	n.KernelShare = ratio(best.kernel, float64(best.relayed()))
	return best
}

// keepReference reports whether a second run of the reference load
// replaces the first: it must have worked, and other work must have
// disturbed it less.
func keepReference(first, second NetnsStep) bool {
	if second.Error != "" || second.Sent == 0 {
		return false
	}
	return first.Error != "" || second.otherCPUs() < first.otherCPUs()
}

// runLoggedStep runs a step and prints its figures.
func runLoggedStep(ctx context.Context, e *env, load netnsLoad, st rampStep) NetnsStep {
	step := runStep(ctx, load, st)
	fmt.Fprintf(e.log, "bench:   %d x %d clients: %6.0f msg/s delivered, lost %d, machine %5.2f µs/pkt (load %5.2f, other %5.2f, server %5.2f; process %5.2f)%s\n",
		st.processes, st.clients, step.Delivered, step.Lost, step.MachineUS, step.LoadGenUS, step.OtherUS, step.ServerUS, step.ServerProcUS, errSuffix(step.Error))
	return step
}

func errSuffix(s string) string {
	if s == "" {
		return ""
	}
	return "; error: " + s
}
