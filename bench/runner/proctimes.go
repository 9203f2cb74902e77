package main

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"time"
)

// userProcessTimes lists every user-space process's own and reaped CPU
// time by PID (kernel threads left out; a process that exits while the
// list is read is left out too). procstat.UserProcesses gives only the
// own time, and the netns scenario needs the reaped time as well (see
// otherWork).
func userProcessTimes() (map[int]procCPU, error) {
	dir, err := os.ReadDir("/proc")
	if err != nil {
		return nil, fmt.Errorf("list processes: %w", err)
	}
	out := make(map[int]procCPU, len(dir))
	for _, e := range dir {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue // not a process
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue // gone
		}
		c, kthread, err := parseStatTimes(b)
		if err != nil {
			return nil, fmt.Errorf("process %d: %w", pid, err)
		}
		if !kthread {
			out[pid] = c
		}
	}
	return out, nil
}

// pfKthread is PF_KTHREAD in the flags field of /proc/PID/stat.
const pfKthread = 0x00200000

// parseStatTimes reads utime, stime, cutime and cstime (fields 14-17, in
// clock ticks of 1/100 s) and whether the process is a kernel thread (the
// flags, field 9) from /proc/PID/stat. Fields are counted from the last
// ')', as the command name may hold spaces and parentheses.
func parseStatTimes(b []byte) (procCPU, bool, error) {
	end := bytes.LastIndexByte(b, ')')
	if end < 0 {
		return procCPU{}, false, fmt.Errorf("parse stat: no command name: %w", errParse)
	}
	f := bytes.Fields(b[end+1:]) // f[0] is field 3
	if len(f) < 15 {
		return procCPU{}, false, fmt.Errorf("parse stat: %d fields: %w", len(f), errParse)
	}
	var v [5]int64
	for i, idx := range []int{6, 11, 12, 13, 14} {
		n, err := strconv.ParseInt(string(f[idx]), 10, 64)
		if err != nil {
			return procCPU{}, false, fmt.Errorf("parse stat field %d: %w", idx+3, err)
		}
		v[i] = n
	}
	tick := time.Second / userHZ
	return procCPU{own: time.Duration(v[1]+v[2]) * tick, reaped: time.Duration(v[3]+v[4]) * tick}, v[0]&pfKthread != 0, nil
}
