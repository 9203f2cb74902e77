package main

import (
	"slices"
	"time"

	"github.com/turnd/turnd/bench/procstat"
)

// cpuSnapshot is one reading of everything the netns scenario charges CPU
// to: the machine's busy time from /proc/stat and the CPU time of every
// user process and of the veths' NAPI threads (kernel threads), by PID.
type cpuSnapshot struct {
	at       time.Time
	statAt   time.Time // when /proc/stat was read
	machine  cpuTimes
	procs    map[int]procstat.Times
	kthreads map[int]time.Duration
}

// cpuRoles says whose CPU is whose in a window.
type cpuRoles struct {
	server int
	// loadGen are the uclient processes and turnutils_peer.
	loadGen []int
	// exited holds the final CPU time (rusage) of load processes, read when
	// they exit: one that exits before the window's last reading is gone
	// from that reading's listing.
	exited map[int]time.Duration
	// loadNAPI are the NAPI threads of the client's and the peer's veth ends
	// (their receive path), serverNAPI those of turnd's two ends.
	loadNAPI, serverNAPI []int
	// runner is the benchmark's own process: its time is other work, but
	// what it reaped is the uclients', already in LoadGen.
	runner int
}

// cpuShare is the machine's CPU over one window, split by the method of
// docs/benchmarks.md ("The namespace topology"), in seconds.
type cpuShare struct {
	// Machine is every CPU's time but idle and iowait: CPUs × wall time −
	// idle − iowait. /proc/stat measures idle and iowait (NO_HZ idle
	// accounting); its busy fields are samples taken at the tick, which
	// miss timer-driven bursts like uclient's and the relaying they cause
	// (see docs/benchmarks.md). MachineTicks is the sum of those fields
	// (user+nice+system+irq+softirq+steal), kept to show the difference.
	Machine      float64 `json:"machine"`
	MachineTicks float64 `json:"machine_ticks"`
	LoadGen      float64 `json:"load_gen"` // uclient and turnutils_peer processes plus the NAPI threads of c and p
	Other        float64 `json:"other"`    // every other user process, with what it reaped (the runner's own time included)
	Server       float64 `json:"server"`   // Machine - LoadGen - Other: the server's share
	// ServerProc and ServerNAPI are parts of Server shown alone: the server
	// process, and the NAPI threads of turnd's veth ends (where the kernel
	// path's tc program runs).
	ServerProc float64 `json:"server_process"`
	ServerNAPI float64 `json:"server_napi"`
}

// splitCPU charges the machine's busy time between two readings. The
// server's share is what is left once the load generator and other work
// are taken out, so it keeps whatever no process was charged with: the
// kernel path, ksoftirqd, kworkers, interrupts.
func splitCPU(a, b cpuSnapshot, r cpuRoles) cpuShare {
	var s cpuShare
	s.Machine = float64(b.machine.cpus)*b.statAt.Sub(a.statAt).Seconds() - float64(b.machine.idle-a.machine.idle)/userHZ
	s.MachineTicks = float64(b.machine.busy-a.machine.busy) / userHZ
	for _, pid := range r.loadGen {
		end := r.exited[pid]
		if c, ok := b.procs[pid]; ok {
			end = c.Own
		}
		s.LoadGen += growth(a.procs[pid].Own, end)
	}
	for _, pid := range r.loadNAPI {
		s.LoadGen += growth(a.kthreads[pid], b.kthreads[pid])
	}
	for _, pid := range r.serverNAPI {
		s.ServerNAPI += growth(a.kthreads[pid], b.kthreads[pid])
	}
	s.ServerProc = growth(a.procs[r.server].Own, b.procs[r.server].Own)
	s.Other = (otherWork(b, r) - otherWork(a, r)).Seconds()
	s.Server = s.Machine - s.LoadGen - s.Other
	return s
}

// otherWork sums the CPU time of every user process in a reading but the
// server and the load generator, with what each has reaped. Between two
// readings its change is all other work: a process that exited meanwhile
// leaves the sum but its whole time shows up in its parent's reaped time,
// the part before the first reading included, so the difference counts
// only what it used in between. (A parent that ignores SIGCHLD reaps
// nothing: such a child's time is lost, and Other comes out low.)
func otherWork(s cpuSnapshot, r cpuRoles) time.Duration {
	var sum time.Duration
	for pid, c := range s.procs {
		switch {
		case pid == r.server || slices.Contains(r.loadGen, pid):
		case pid == r.runner:
			sum += c.Own
		default:
			sum += c.Own + c.Reaped
		}
	}
	return sum
}

// growth is how much a CPU counter grew, in seconds; a counter that went
// missing (a process gone without a final reading) adds nothing.
func growth(from, to time.Duration) float64 {
	if to <= from {
		return 0
	}
	return (to - from).Seconds()
}

// perPacketUS is seconds of CPU per packet, in microseconds.
func perPacketUS(seconds float64, packets int64) float64 {
	if packets <= 0 {
		return 0
	}
	return seconds * 1e6 / float64(packets)
}

// ratio is a/b, or 0 when either is not a measured figure.
func ratio(a, b float64) float64 {
	if a <= 0 || b <= 0 {
		return 0
	}
	return a / b
}
