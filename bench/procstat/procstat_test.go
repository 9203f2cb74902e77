package procstat

import (
	"errors"
	"os"
	"strconv"
	"testing"
	"time"
)

func TestParseStat(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want time.Duration
		err  bool
	}{
		{"plain", "42 (turnd) S 1 42 42 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 9 0 1 2 3", 3 * time.Second, false},
		{"name with spaces and parens", "42 (a b) (c)) R 1 42 42 0 -1 0 0 0 0 0 7 3 0 0", 100 * time.Millisecond, false},
		{"no name", "42 turnd S 1", 0, true},
		{"short", "42 (turnd) S 1 2 3", 0, true},
		{"not a number", "42 (x) S 1 42 42 0 -1 0 0 0 0 0 x 3 0 0", 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseStat([]byte(tt.in))
			if (err != nil) != tt.err {
				t.Fatalf("err = %v, want error %v", err, tt.err)
			}
			if got != tt.want {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

// TestParseStatTimes: own time is utime+stime, reaped time cutime+cstime,
// read past a command name holding ") ".
func TestParseStatTimes(t *testing.T) {
	// pid (comm) state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime cutime cstime ...
	stat := "42 (a) b) S 1 42 42 0 -1 4194560 10 0 0 0 150 50 30 20 20 0 1 0 100 0 0\n"
	got, err := parseStatTimes([]byte(stat))
	if err != nil {
		t.Fatal(err)
	}
	if want := (Times{Own: 2 * time.Second, Reaped: 500 * time.Millisecond}); got != want {
		t.Fatalf("parseStatTimes = %+v, want %+v", got, want)
	}
	kt := "2 (kthreadd) S 0 0 0 0 -1 2129984 0 0 0 0 1 2 0 0 20 0 1 0 1 0 0\n"
	if got, _ := parseStatTimes([]byte(kt)); !got.KernelThread {
		t.Fatal("PF_KTHREAD not seen")
	}
}

func TestParseSchedstat(t *testing.T) {
	d, err := parseSchedstat([]byte("248100498 16647061 584\n"))
	if err != nil || d != 248100498*time.Nanosecond {
		t.Fatalf("parseSchedstat = %v, %v", d, err)
	}
}

func TestStatusKB(t *testing.T) {
	status := "Name:\tturnd\nVmHWM:\t   17228 kB\nVmRSS:\t   15000 kB\nThreads:\t9\n"
	tests := []struct {
		key  string
		want int64
		err  bool
	}{
		{"VmHWM:", 17228, false},
		{"VmRSS:", 15000, false},
		{"VmSwap:", 0, true},
		{"Threads:", 0, true}, // no unit: not a memory line
	}
	for _, tt := range tests {
		got, err := statusKB([]byte(status), tt.key)
		if (err != nil) != tt.err || got != tt.want {
			t.Errorf("%s: got %d, %v; want %d, error %v", tt.key, got, err, tt.want, tt.err)
		}
		if err != nil && !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: error %v is not ErrMalformed", tt.key, err)
		}
	}
}

func TestReadSelf(t *testing.T) {
	s, err := Read(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if s.RSSKB <= 0 || s.HWMKB < s.RSSKB {
		t.Errorf("implausible sample %+v", s)
	}
}

// TestUserProcessesSeesSelfNotKernel: this process is listed with its CPU
// time; a kernel thread (kthreadd is PID 2 where this runs in the root PID
// namespace) is not.
func TestUserProcessesSeesSelfNotKernel(t *testing.T) {
	kthread := false
	if b, err := os.ReadFile("/proc/2/stat"); err == nil {
		st, err := parseStatTimes(b)
		if err != nil {
			t.Fatal(err)
		}
		kthread = st.KernelThread
	}
	// Burn CPU until the kernel has charged this process at least a tick.
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		all, err := UserProcesses()
		if err != nil {
			t.Fatal(err)
		}
		if _, listed := all[2]; listed && kthread {
			t.Fatal("kernel thread PID 2 listed as a user process")
		}
		if all[os.Getpid()] > 0 {
			return
		}
		for i := 0; i < 1_000_000; i++ {
			_ = strconv.Itoa(i)
		}
	}
	t.Fatal("this process never appeared with CPU time")
}
