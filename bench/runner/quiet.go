package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strconv"
	"time"
)

// The benchmark shares the machine's CPUs with nothing else only if the
// machine is quiet: another program's load would be charged to neither
// server yet slow both down, and not equally. Before each server starts,
// the runner waits (bounded) until the machine has been nearly idle for a
// second, and it records how busy the machine was beyond the server and
// the load generator during each scenario.
const (
	quietBusyCPUs = 0.15 // CPUs busy with something else that still count as quiet
	quietMaxWait  = 3 * time.Minute
	// disturbedCPUs is how much other work during a row (beyond the
	// server, the load tools, uclient's echo peer and interrupts) makes
	// the row worth measuring again.
	disturbedCPUs = 0.2
)

// userHZ is the unit of /proc/stat: clock ticks per second (100 on every
// Linux architecture Go supports).
const userHZ = 100

// cpuTimes is the machine-wide busy and total time from /proc/stat, in
// clock ticks; irq counts hard and soft interrupt time, which the kernel
// charges to no process (on loopback, much of the packet delivery). idle
// is idle plus iowait, and cpus the number of CPU lines.
type cpuTimes struct {
	busy, irq, total, idle int64
	cpus                   int
}

func readCPUTimes() (cpuTimes, error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return cpuTimes{}, fmt.Errorf("read /proc/stat: %w", err)
	}
	return parseCPUTimes(b)
}

// parseCPUTimes reads the first line of /proc/stat: the "cpu" line, every
// CPU summed. Its fields are user nice system idle iowait irq softirq
// steal guest guest_nice; busy is all of the first eight but idle and iowait.
// The "cpuN" lines that follow are counted.
func parseCPUTimes(b []byte) (cpuTimes, error) {
	line, rest, _ := bytes.Cut(b, []byte("\n"))
	f := bytes.Fields(line)
	if len(f) < 5 || string(f[0]) != "cpu" {
		return cpuTimes{}, fmt.Errorf("parse /proc/stat: %w", errParse)
	}
	var t cpuTimes
	for i, v := range f[1:] {
		n, err := strconv.ParseInt(string(v), 10, 64)
		if err != nil {
			return cpuTimes{}, fmt.Errorf("parse /proc/stat: %w", err)
		}
		if i >= 8 { // guest time is already counted in user time
			break
		}
		t.total += n
		if i != 3 && i != 4 { // idle, iowait
			t.busy += n
		} else {
			t.idle += n
		}
		if i == 5 || i == 6 { // irq, softirq
			t.irq += n
		}
	}
	for l := range bytes.Lines(rest) {
		if len(l) > 3 && string(l[:3]) == "cpu" && l[3] >= '0' && l[3] <= '9' {
			t.cpus++
		}
	}
	return t, nil
}

// busyCPUs is how many CPUs were busy on average between two readings.
func busyCPUs(a, b cpuTimes, cpus int) float64 {
	if b.total <= a.total {
		return 0
	}
	return float64(b.busy-a.busy) / float64(b.total-a.total) * float64(cpus)
}

// waitQuiet returns once a one-second sample shows the machine nearly
// idle, or after limit with the last figure (the run goes on, and the row
// records it).
func waitQuiet(ctx context.Context, e *env, limit time.Duration) float64 {
	deadline := time.Now().Add(limit)
	said := false
	for {
		a, err := readCPUTimes()
		if err != nil {
			return 0
		}
		select {
		case <-ctx.Done():
			return 0
		case <-time.After(time.Second):
		}
		b, err := readCPUTimes()
		if err != nil {
			return 0
		}
		busy := busyCPUs(a, b, e.opts.cpus)
		if busy <= quietBusyCPUs || time.Now().After(deadline) {
			if said || busy > quietBusyCPUs {
				fmt.Fprintf(e.log, "bench:   machine busy %.2f CPUs before start\n", busy)
			}
			return busy
		}
		if !said {
			fmt.Fprintf(e.log, "bench:   waiting for a quiet machine (%.2f CPUs busy with other work)\n", busy)
			said = true
		}
	}
}
