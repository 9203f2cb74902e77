package main

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/turnd/turnd/pkg/httpapi"
)

// step is what the watcher sees at one look: the process and /status.
type step struct {
	alive bool
	total int // allocations; -1 means /status fails
	serve bool
}

// script runs a drainWatch over steps one second apart, starting at t0,
// with the drain's deadline at t0+deadline.
func script(t *testing.T, tty bool, deadline time.Duration, steps ...step) (string, drainSummary, error) {
	t.Helper()
	t0 := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	i := -1
	ticks := make(chan time.Time, len(steps))
	for range steps {
		ticks <- t0
	}
	var out strings.Builder
	w := &drainWatch{
		pid: 42, tick: ticks, out: &out, tty: tty, fallback: t0.Add(deadline),
		now: func() time.Time {
			i++
			if i >= len(steps) {
				t.Fatalf("the watcher looked %d times; the script has %d steps", i+1, len(steps))
			}
			return t0.Add(time.Duration(i) * time.Second)
		},
		alive: func() bool { return steps[i].alive },
		fetch: func() (httpapi.Status, error) {
			s := steps[i]
			if s.total < 0 {
				return httpapi.Status{}, errors.New("connection refused")
			}
			st := httpapi.Status{State: "draining", Allocations: httpapi.Allocations{Total: s.total,
				ByTransport: map[string]int{"tcp": s.total}}}
			if s.serve {
				st.State, st.Accepting = "serving", true
				return st, nil
			}
			st.Drain = &httpapi.DrainProgress{Trigger: "terminate", StartedAt: t0, Deadline: t0.Add(deadline)}
			return st, nil
		},
	}
	sum, err := w.run(t0, -1)
	return out.String(), sum, err
}

func TestDrainWatchPrintsOneLinePerChange(t *testing.T) {
	out, sum, err := script(t, false, time.Hour,
		step{alive: true, total: 2}, step{alive: true, total: 2}, step{alive: true, total: 1},
		step{alive: true, total: 1}, step{alive: false})
	if err != nil {
		t.Fatal(err)
	}
	want := "draining: 2 allocations left (udp 0, tcp 2, tls 0), deadline in 1h0m0s\n" +
		"draining: 1 allocation left (udp 0, tcp 1, tls 0), deadline in 59m58s\n"
	if out != want {
		t.Errorf("output:\n%q\nwant:\n%q", out, want)
	}
	if sum.atStart != 2 || sum.last != 1 || sum.duration != 4*time.Second {
		t.Errorf("summary = %+v", sum)
	}
	if got := sum.String(); got != "turnd (pid 42) exited 4s after the drain started: 2 allocations drained" {
		t.Errorf("summary line = %q", got)
	}
}

func TestDrainWatchRedrawsOnATerminal(t *testing.T) {
	out, _, err := script(t, true, time.Hour, step{alive: true, total: 1}, step{alive: true, total: 1}, step{alive: false})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Count(out, "\r\033[K") != 2 || !strings.HasSuffix(out, "\n") || strings.Count(out, "\n") != 1 {
		t.Errorf("terminal output = %q, want two redraws of one line, then a newline", out)
	}
}

func TestDrainWatchGivesUpPastTheDeadline(t *testing.T) {
	steps := []step{}
	for range 37 { // the 37th look is 31 s past the deadline
		steps = append(steps, step{alive: true, total: 3})
	}
	_, sum, err := script(t, false, 5*time.Second, steps...)
	if !errors.Is(err, errStillRunning) {
		t.Fatalf("err = %v, want errStillRunning", err)
	}
	if !strings.Contains(err.Error(), "31s past the deadline") || sum.atStart != 3 {
		t.Errorf("err = %v, summary %+v", err, sum)
	}
}

func TestDrainWatchWithoutStatusUsesTheFallbackDeadline(t *testing.T) {
	steps := []step{}
	for range 34 {
		steps = append(steps, step{alive: true, total: -1})
	}
	out, _, err := script(t, false, 2*time.Second, steps...)
	if !errors.Is(err, errStillRunning) {
		t.Fatalf("err = %v, want errStillRunning after fallback + margin", err)
	}
	if strings.Count(out, "\n") != 1 || !strings.Contains(out, "/status: connection refused") {
		t.Errorf("output = %q, want the unreachable /status reported once", out)
	}
}

func TestDrainWatchStatusVanishingWithTheProcess(t *testing.T) {
	// /status fails and the process is gone by the second look: an exit,
	// not an error line.
	fails := 0
	w := &drainWatch{pid: 7, tick: make(chan time.Time), out: &strings.Builder{}, now: time.Now,
		alive: func() bool { fails++; return fails == 1 },
		fetch: func() (httpapi.Status, error) { return httpapi.Status{}, errors.New("refused") }}
	sum, err := w.run(time.Now(), 4)
	if err != nil || w.out.(*strings.Builder).Len() != 0 || sum.atStart != 4 {
		t.Fatalf("err %v, output %q, summary %+v", err, w.out, sum)
	}
}

func TestDrainSummary(t *testing.T) {
	dl := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		s    drainSummary
		want string
	}{
		{drainSummary{pid: 1, duration: 1500 * time.Millisecond, atStart: 1, deadline: dl, exited: dl.Add(-time.Hour)},
			"turnd (pid 1) exited 1.5s after the drain started: 1 allocation drained"},
		{drainSummary{pid: 1, duration: time.Hour, atStart: 5, last: 2, deadline: dl, exited: dl.Add(time.Second)},
			"turnd (pid 1) exited 1h0m0s after the drain started: 3 allocations drained of 5; the deadline passed with about 2 live, which turnd closed"},
		{drainSummary{pid: 1, duration: time.Second, atStart: -1},
			"turnd (pid 1) exited 1s after the drain started (its allocations were never seen: /status was unreachable)"},
	}
	for _, tt := range tests {
		if got := tt.s.String(); got != tt.want {
			t.Errorf("got  %q\nwant %q", got, tt.want)
		}
	}
}
