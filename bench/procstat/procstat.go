package procstat

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"time"
)

// clockTick is USER_HZ, the unit of utime and stime in /proc/PID/stat. It is
// 100 on every Linux architecture Go supports; reading it properly needs
// sysconf(3) and so cgo, which this package avoids.
const clockTick = 10 * time.Millisecond

// Sample is one reading of a process's counters.
type Sample struct {
	// CPU is user plus system time the process has used since it started
	// (all threads, including those that have exited).
	CPU time.Duration
	// RSSKB is the resident set size now (VmRSS), in KiB.
	RSSKB int64
	// HWMKB is the peak resident set size (VmHWM), in KiB.
	HWMKB int64
}

// Read samples process pid.
func Read(pid int) (Sample, error) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return Sample{}, fmt.Errorf("read stat: %w", err)
	}
	cpu, err := parseStat(stat)
	if err != nil {
		return Sample{}, err
	}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return Sample{}, fmt.Errorf("read status: %w", err)
	}
	s := Sample{CPU: cpu}
	if s.RSSKB, err = statusKB(status, "VmRSS:"); err != nil {
		return Sample{}, err
	}
	if s.HWMKB, err = statusKB(status, "VmHWM:"); err != nil {
		return Sample{}, err
	}
	return s, nil
}

// Times is what /proc/PID/stat says about a process's CPU time.
type Times struct {
	// Own is utime+stime: the process's threads, including those that
	// have exited.
	Own time.Duration
	// Reaped is cutime+cstime: the children it has waited for. A
	// short-lived child is gone from the next listing, but its time is
	// here in its parent's.
	Reaped time.Duration
	// KernelThread is whether the process is a kernel thread (PF_KTHREAD).
	KernelThread bool
}

// UserProcesses returns the CPU time (utime+stime) of every user-space
// process now running, by PID; kernel threads are left out. A process that
// exits while the list is read is left out too.
func UserProcesses() (map[int]time.Duration, error) {
	times, err := UserProcessTimes()
	if err != nil {
		return nil, err
	}
	cpu := make(map[int]time.Duration, len(times))
	for pid, t := range times {
		cpu[pid] = t.Own
	}
	return cpu, nil
}

// UserProcessTimes is UserProcesses with each process's reaped time too.
func UserProcessTimes() (map[int]Times, error) {
	dir, err := os.ReadDir("/proc")
	if err != nil {
		return nil, fmt.Errorf("list processes: %w", err)
	}
	out := make(map[int]Times, len(dir))
	for _, e := range dir {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue // not a process
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue // gone
		}
		t, err := parseStatTimes(b)
		if err != nil {
			return nil, fmt.Errorf("process %d: %w", pid, err)
		}
		if !t.KernelThread {
			out[pid] = t
		}
	}
	return out, nil
}

// RunTime returns how long process pid has run on a CPU, from
// /proc/PID/schedstat. For a kernel thread (a NAPI thread) it is the
// figure that /proc/PID/stat's utime+stime are scaled to.
func RunTime(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/schedstat", pid))
	if err != nil {
		return 0, fmt.Errorf("read schedstat: %w", err)
	}
	return parseSchedstat(b)
}

// parseSchedstat reads the first field of /proc/PID/schedstat: time on a
// CPU, in nanoseconds.
func parseSchedstat(b []byte) (time.Duration, error) {
	f := bytes.Fields(b)
	if len(f) != 3 {
		return 0, fmt.Errorf("parse schedstat %q: %w", b, ErrMalformed)
	}
	ns, err := strconv.ParseInt(string(f[0]), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("parse schedstat: %w", err)
	}
	return time.Duration(ns), nil
}

// pfKthread is PF_KTHREAD in the flags field of /proc/PID/stat.
const pfKthread = 0x00200000

// parseStat returns utime+stime from the contents of /proc/PID/stat.
func parseStat(b []byte) (time.Duration, error) {
	t, err := parseStatTimes(b)
	return t.Own, err
}

// parseStatTimes reads the contents of /proc/PID/stat. The command name
// (field 2) may contain spaces and parentheses, so fields are counted from
// the last ')'.
func parseStatTimes(b []byte) (Times, error) {
	end := bytes.LastIndexByte(b, ')')
	if end < 0 {
		return Times{}, fmt.Errorf("parse stat: no command name: %w", ErrMalformed)
	}
	// After ") " come field 3 (state) onwards; flags is field 9 and utime,
	// stime, cutime and cstime are fields 14-17, so indexes 6 and 11-14 here.
	fields := bytes.Fields(b[end+1:])
	if len(fields) < 15 {
		return Times{}, fmt.Errorf("parse stat: %d fields: %w", len(fields), ErrMalformed)
	}
	flags, err := strconv.ParseUint(string(fields[6]), 10, 64)
	if err != nil {
		return Times{}, fmt.Errorf("parse stat flags: %w", err)
	}
	var ticks [4]int64
	for i, f := range fields[11:15] {
		v, err := strconv.ParseInt(string(f), 10, 64)
		if err != nil {
			return Times{}, fmt.Errorf("parse stat field %d: %w", i+14, err)
		}
		ticks[i] = v
	}
	return Times{
		Own:          time.Duration(ticks[0]+ticks[1]) * clockTick,
		Reaped:       time.Duration(ticks[2]+ticks[3]) * clockTick,
		KernelThread: flags&pfKthread != 0,
	}, nil
}

// statusKB returns the value of a "Key:   123 kB" line of /proc/PID/status.
func statusKB(b []byte, key string) (int64, error) {
	i := bytes.Index(b, []byte("\n"+key))
	if i < 0 {
		return 0, fmt.Errorf("parse status: no %s: %w", key, ErrMalformed)
	}
	line := b[i+1+len(key):]
	if j := bytes.IndexByte(line, '\n'); j >= 0 {
		line = line[:j]
	}
	f := bytes.Fields(line)
	if len(f) != 2 || string(f[1]) != "kB" {
		return 0, fmt.Errorf("parse status: %s %q: %w", key, line, ErrMalformed)
	}
	v, err := strconv.ParseInt(string(f[0]), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("parse status: %w", err)
	}
	return v, nil
}
