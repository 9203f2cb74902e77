package main

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/turnd/turnd/bench/procstat"
)

// TestParseCPUTimes: busy is user+nice+system+irq+softirq+steal of the
// "cpu" line (idle and iowait apart, guest time already inside user), and
// every "cpuN" line is a CPU.
func TestParseCPUTimes(t *testing.T) {
	stat := "cpu  1000 20 300 5000 70 4 60 5 100 0\ncpu0 1 2 3 4 5 6 7 8 9 10\ncpu1 1 2 3 4 5 6 7 8 9 10\nintr 5 6\nsoftirq 1 2\n"
	got, err := parseCPUTimes([]byte(stat))
	if err != nil {
		t.Fatal(err)
	}
	if want := (cpuTimes{busy: 1000 + 20 + 300 + 4 + 60 + 5, irq: 64, idle: 5070, total: 1000 + 20 + 300 + 5000 + 70 + 4 + 60 + 5, cpus: 2}); got != want {
		t.Fatalf("parseCPUTimes = %+v, want %+v", got, want)
	}
	if _, err := parseCPUTimes([]byte("intr 1 2 3\n")); err == nil {
		t.Fatal("a first line that is not the cpu line parsed")
	}
}

// TestSplitCPU: the machine's time is CPUs × wall time less idle and
// iowait (not the tick-sampled busy fields), and the server's share is it less the
// load generator (its processes, alive or exited, and the NAPI threads of
// its veth ends) and less other work, including a short-lived process
// that exited in the window (seen through its parent's reaped time).
func TestSplitCPU(t *testing.T) {
	s := time.Second
	const server, peer, uc1, uc2, runner, shell, napiC, napiT = 10, 11, 12, 13, 14, 15, 90, 91
	t0 := time.Unix(1000, 0)
	a := cpuSnapshot{
		statAt:  t0,
		machine: cpuTimes{busy: 1000, idle: 500, cpus: 2}, // ticks of 1/100 s
		procs: map[int]procstat.Times{
			server: {Own: 1 * s}, peer: {Own: 2 * s}, uc1: {Own: 1 * s}, uc2: {Own: 1 * s},
			runner: {Own: 1 * s, Reaped: 3 * s}, shell: {Own: 1 * s},
			16: {Own: 4 * s}, // a compiler of other work, gone by the end
		},
		kthreads: map[int]time.Duration{napiC: 1 * s, napiT: 1 * s},
	}
	b := cpuSnapshot{
		statAt:  t0.Add(15 * time.Second),
		machine: cpuTimes{busy: 1000 + 400, idle: 500 + 1000, cpus: 2}, // 2 × 15 s − 10 s idle: 20 s busy; the ticks saw 4 s
		procs: map[int]procstat.Times{
			server: {Own: 4 * s},                                  // +3
			peer:   {Own: 3 * s},                                  // +1
			uc1:    {Own: 3 * s},                                  // +2; uc2 has exited: rusage below
			runner: {Own: 1500 * time.Millisecond, Reaped: 9 * s}, // +0.5 own; reaped uclients are not other work
			shell:  {Own: 1 * s, Reaped: 5 * s},                   // reaped the compiler: 4 s before, 1 s in the window
		},
		kthreads: map[int]time.Duration{napiC: 2 * s, napiT: 4 * s},
	}
	r := cpuRoles{server: server, runner: runner, loadGen: []int{peer, uc1, uc2}, exited: map[int]time.Duration{uc1: 9 * s, uc2: 2 * s},
		loadNAPI: []int{napiC}, serverNAPI: []int{napiT}}
	got := splitCPU(a, b, r)
	want := cpuShare{Machine: 20, MachineTicks: 4, LoadGen: 1 + 2 + 1 + 1, Other: 0.5 + 1, ServerProc: 3, ServerNAPI: 3}
	want.Server = want.Machine - want.LoadGen - want.Other
	if !near(got.Machine, want.Machine) || !near(got.MachineTicks, want.MachineTicks) || !near(got.LoadGen, want.LoadGen) || !near(got.Other, want.Other) ||
		!near(got.Server, want.Server) || !near(got.ServerProc, want.ServerProc) || !near(got.ServerNAPI, want.ServerNAPI) {
		t.Fatalf("splitCPU = %+v, want %+v", got, want)
	}
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

// TestStepSettle: rates are each way over the window, CPU per packet
// counts both crossings, and a step holds only with nothing lost.
func TestStepSettle(t *testing.T) {
	s := NetnsStep{Sent: 50000, Received: 50000, WindowS: 5, CPU: cpuShare{Machine: 2, LoadGen: 0.5, Other: 0.1, Server: 1.4, ServerProc: 1}}
	s.settle()
	if s.OfferedRate != 10000 || s.Delivered != 10000 || !near(s.MachineUS, 20) || !near(s.LoadGenUS, 5) || !near(s.ServerUS, 14) ||
		!near(s.ServerProcUS, 10) || !near(s.OtherUS, 1) || !s.LossFree {
		t.Fatalf("settled %+v", s)
	}
	lossy := NetnsStep{Sent: 100, Received: 99, Lost: 1, WindowS: 1}
	lossy.settle()
	short := NetnsStep{Sent: 100, Received: 99, WindowS: 1} // uclient counted no loss, yet one is missing
	short.settle()
	failed := NetnsStep{Sent: 100, Received: 100, WindowS: 1, Error: "run ip: exit status 255"}
	failed.settle()
	if lossy.LossFree || short.LossFree || failed.LossFree || (&NetnsStep{}).LossFree {
		t.Fatal("a step with loss, a missing echo, an error or no traffic held")
	}
}

// TestLossFreeMax: the highest delivered rate of the steps that held, up
// to the first that did not; a later step that held again does not count.
func TestLossFreeMax(t *testing.T) {
	held := func(rate float64) NetnsStep { return NetnsStep{Delivered: rate, LossFree: true} }
	lost := NetnsStep{Delivered: 30000}
	cases := []struct {
		steps []NetnsStep
		rate  float64
		open  bool
	}{
		{[]NetnsStep{held(7000), held(12000), held(11000)}, 12000, true},
		{[]NetnsStep{held(7000), lost, held(40000)}, 7000, false},
		{[]NetnsStep{lost}, 0, false},
		{nil, 0, false},
	}
	for i, c := range cases {
		if rate, open := lossFreeMax(c.steps); rate != c.rate || open != c.open {
			t.Errorf("case %d: lossFreeMax = %v, %v; want %v, %v", i, rate, open, c.rate, c.open)
		}
	}
}

// TestWindowRecorder: the window runs from the earliest start of any
// uclient to the latest end, and a uclient without totals voids it.
func TestWindowRecorder(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(d time.Duration) cpuSnapshot { return cpuSnapshot{at: t0.Add(d)} }
	next := []cpuSnapshot{at(2 * time.Second), at(1 * time.Second), at(3 * time.Second), at(9 * time.Second), at(7 * time.Second)}
	r := &windowRecorder{take: func() cpuSnapshot { s := next[0]; next = next[1:]; return s },
		starts: map[int]cpuSnapshot{}, ends: map[int]cpuSnapshot{}}
	r.mark(0, false) // 2 s
	r.mark(1, false) // 1 s
	r.mark(0, false) // 3 s: uclient 0's later start replaces its first
	if _, _, ok := r.window(2); ok {
		t.Fatal("a window with no ends")
	}
	r.mark(0, true) // 9 s
	r.mark(1, true) // 7 s
	a, b, ok := r.window(2)
	if !ok || !a.at.Equal(t0.Add(time.Second)) || !b.at.Equal(t0.Add(9*time.Second)) {
		t.Fatalf("window %v..%v (%v), want 1s..9s", a.at.Sub(t0), b.at.Sub(t0), ok)
	}
}

func TestSumSeries(t *testing.T) {
	text := `# HELP turnd_kernel_relayed_packets_total Packets the kernel fast path relayed.
# TYPE turnd_kernel_relayed_packets_total counter
turnd_kernel_relayed_packets_total{direction="to_client"} 6
turnd_kernel_relayed_packets_total{direction="to_peer"} 7
turnd_kernel_relayed_packets_totals 1000
turnd_relayed_packets_total{direction="to_peer"} 1.5e+06
turnd_relayed_packets_total{direction="to_client"} 10
`
	got, err := sumSeries(strings.NewReader(text), kernelRelayedMetric, relayedMetric)
	if err != nil {
		t.Fatal(err)
	}
	if got[kernelRelayedMetric] != 13 || got[relayedMetric] != 1500010 {
		t.Fatalf("sumSeries = %v", got)
	}
}

// TestNetnsNames: a NAPI thread's name, cut at 15 characters by the
// kernel, still names the whole device, and another run's devices do not
// match.
func TestNetnsNames(t *testing.T) {
	topo := newTopology(4194304) // the largest PID Linux hands out
	for _, dev := range []string{topo.c, topo.t, topo.u, topo.p} {
		comm := ("napi/" + dev + "-8192")[:15]
		if !isNAPIThreadOf(comm, dev) {
			t.Errorf("%q not seen as %s's NAPI thread", comm, dev)
		}
	}
	if isNAPIThreadOf("napi/c41943040-2", "c4194304") || isNAPIThreadOf("napi/t4194304-2", "c4194304") {
		t.Error("another device's thread matched")
	}
}

// TestKeepReference: a second reference run replaces the first only if it
// worked and other work disturbed it less (CPUs on average over its window).
func TestKeepReference(t *testing.T) {
	run := func(other, window float64, err string) NetnsStep {
		return NetnsStep{Sent: 1, WindowS: window, CPU: cpuShare{Other: other}, Error: err}
	}
	first := run(3, 6, "") // 0.5 CPUs
	cases := []struct {
		second NetnsStep
		keep   bool
	}{
		{run(0.6, 6, ""), true},         // 0.1 CPUs
		{run(2.8, 4, ""), false},        // 0.7 CPUs: worse, though less CPU in all
		{run(0.1, 6, "uclient"), false}, // failed
	}
	for i, c := range cases {
		if got := keepReference(first, c.second); got != c.keep {
			t.Errorf("case %d: keepReference = %v, want %v", i, got, c.keep)
		}
	}
	if !keepReference(run(0, 6, "uclient"), run(3, 6, "")) {
		t.Error("a working run did not replace a failed one")
	}
}

// TestPortWindow: a server's steps get disjoint local port ranges above
// the privileged ports and below 65536.
func TestPortWindow(t *testing.T) {
	prevHi := 1023
	for i := range 6 {
		lo, hi := portWindow(i)
		if lo <= prevHi || hi < lo || hi > 65535 {
			t.Fatalf("step %d: ports %d-%d after %d", i, lo, hi, prevHi)
		}
		prevHi = hi
	}
	// A server gets at most six steps (the reference twice, four more of
	// the ramp); a seventh must still be a valid range.
	if lo, hi := portWindow(6); lo < 1024 || hi > 65535 {
		t.Fatalf("step 6: ports %d-%d", lo, hi)
	}
}
