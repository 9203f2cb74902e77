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

// parseStat returns utime+stime from the contents of /proc/PID/stat. The
// command name (field 2) may contain spaces and parentheses, so fields are
// counted from the last ')'.
func parseStat(b []byte) (time.Duration, error) {
	end := bytes.LastIndexByte(b, ')')
	if end < 0 {
		return 0, fmt.Errorf("parse stat: no command name: %w", ErrMalformed)
	}
	// After ") " come field 3 (state) onwards; utime and stime are fields
	// 14 and 15, so indexes 11 and 12 here.
	fields := bytes.Fields(b[end+1:])
	if len(fields) < 13 {
		return 0, fmt.Errorf("parse stat: %d fields: %w", len(fields), ErrMalformed)
	}
	var ticks int64
	for _, f := range fields[11:13] {
		v, err := strconv.ParseInt(string(f), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("parse stat: %w", err)
		}
		ticks += v
	}
	return time.Duration(ticks) * clockTick, nil
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
