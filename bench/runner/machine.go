package main

import (
	"bufio"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
)

// describeMachine gathers what a reader needs to compare runs. Missing
// facts are left empty rather than failing the benchmark.
func describeMachine(turndBin, coturnBin string) Machine {
	m := Machine{CPUs: runtime.NumCPU(), GoVersion: runtime.Version()}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(b))
	}
	m.CPUModel = procField("/proc/cpuinfo", "model name")
	if v := procField("/proc/meminfo", "MemTotal"); v != "" {
		m.MemTotalKB, _ = strconv.ParseInt(strings.Fields(v)[0], 10, 64)
	}
	if out, err := exec.Command(turndBin, "version").Output(); err == nil {
		m.TurndVersion = strings.TrimSpace(string(out))
	}
	// turnserver --version prints the bare version and exits.
	if out, err := exec.Command(coturnBin, "--version").Output(); err == nil {
		m.CoturnVer = strings.TrimSpace(string(out))
	}
	return m
}

// procField returns the value of the first "key: value" line of a /proc file.
func procField(path, key string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == key {
			return strings.TrimSpace(v)
		}
	}
	return ""
}
