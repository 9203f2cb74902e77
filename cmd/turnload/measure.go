package main

import (
	"syscall"
	"time"

	"github.com/turnd/turnd/bench/procstat"
)

// selfCPU is turnload's user+system time so far (getrusage: microsecond
// resolution, every thread).
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// serverProbe samples the server process named by --server-pid; with no
// PID every sample is empty and reports leave the section out.
type serverProbe struct{ pid int }

func (p serverProbe) sample() (procstat.Sample, bool) {
	if p.pid == 0 {
		return procstat.Sample{}, false
	}
	s, err := procstat.Read(p.pid)
	return s, err == nil
}

// window returns the server section for a window that began with before,
// or nil without a PID.
func (p serverProbe) window(before procstat.Sample, ok bool, packets uint64) *serverReport {
	after, ok2 := p.sample()
	if !ok || !ok2 {
		return nil
	}
	cpu := after.CPU - before.CPU
	return &serverReport{PID: p.pid, CPUSeconds: cpu.Seconds(), CPUPerPacketUS: perPacketUS(cpu, packets),
		RSSKB: after.RSSKB, HWMKB: after.HWMKB}
}
