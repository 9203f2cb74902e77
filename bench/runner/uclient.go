package main

import (
	"bufio"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"time"

	"github.com/turnd/turnd/bench/procstat"
)

// uclient's output (coturn 4.6.1). Per-second progress lines:
//
//	3: : start_mclient: msz=200, tot_send_msgs=31275, tot_recv_msgs=31131, ...
//
// then the totals and the summary:
//
//	8: : start_mclient: tot_send_msgs=200000, tot_recv_msgs=200000
//	8: : Total lost packets 0 (0.000000%), total send dropped 0 (0.000000%)
//	8: : Average round trip delay 8.679785 ms; min = 0 ms, max = 164 ms
var (
	reProgress = regexp.MustCompile(`start_mclient: msz=\d+, tot_send_msgs=(\d+), tot_recv_msgs=(\d+)`)
	reTotals   = regexp.MustCompile(`start_mclient: tot_send_msgs=(\d+), tot_recv_msgs=(\d+)`)
	reLost     = regexp.MustCompile(`Total lost packets (\d+) \(([\d.]+)%\)`)
	reRTT      = regexp.MustCompile(`Average round trip delay ([\d.]+) ms; min = ([\d.]+) ms, max = ([\d.]+) ms`)
)

// uclientResult is what one uclient run measured, with the server's CPU
// over its sending window.
type uclientResult struct {
	Sent, Received int64
	Lost           int64 // uclient's "Total lost packets"
	LossPct        float64
	RTTAvgMs       float64
	RTTMaxMs       float64
	WindowSeconds  float64 // from the last progress line before sending to the totals line
	PeakSendRate   float64 // the busiest second's sends
	ServerCPU      time.Duration
	ClientCPU      time.Duration
}

// uclientWatcher follows uclient's output as it arrives and samples the
// server when sending starts and when the totals are printed, so the
// server's CPU excludes uclient's slow, one-by-one allocation phase.
type uclientWatcher struct {
	sample func() (procstat.Sample, error)
	// marked, if set, runs at each sample: end is false at a candidate
	// start of the window (the last one counts) and true at its end.
	marked func(end bool)
	res    uclientResult

	startAt, endAt   time.Time
	startCPU, endCPU time.Duration
	started, ended   bool
	lastSent         int64
	lastAt           time.Time
	lines            []string // kept for error messages
}

func (w *uclientWatcher) mark(end bool) (time.Time, time.Duration) {
	if w.marked != nil {
		w.marked(end)
	}
	s, err := w.sample()
	if err != nil {
		return time.Now(), -1
	}
	return time.Now(), s.CPU
}

// consume reads uclient's stdout to the end.
func (w *uclientWatcher) consume(r io.Reader) {
	w.startAt, w.startCPU = w.mark(false) // in case no idle progress line comes
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		if len(w.lines) < 400 {
			w.lines = append(w.lines, line)
		}
		if m := reProgress.FindStringSubmatch(line); m != nil && !w.ended {
			sent, _ := strconv.ParseInt(m[1], 10, 64)
			now := time.Now()
			if sent == 0 {
				// Still allocating: the window starts no earlier than this.
				w.startAt, w.startCPU = w.mark(false)
				w.started = true
			} else if !w.lastAt.IsZero() {
				if d := now.Sub(w.lastAt).Seconds(); d > 0.5 {
					w.res.PeakSendRate = max(w.res.PeakSendRate, float64(sent-w.lastSent)/d)
				}
			}
			w.lastSent, w.lastAt = sent, now
			continue
		}
		if m := reTotals.FindStringSubmatch(line); m != nil && !w.ended {
			w.endAt, w.endCPU = w.mark(true)
			w.ended = true
			w.res.Sent, _ = strconv.ParseInt(m[1], 10, 64)
			w.res.Received, _ = strconv.ParseInt(m[2], 10, 64)
			continue
		}
		if m := reLost.FindStringSubmatch(line); m != nil {
			w.res.Lost, _ = strconv.ParseInt(m[1], 10, 64)
			w.res.LossPct, _ = strconv.ParseFloat(m[2], 64)
			continue
		}
		if m := reRTT.FindStringSubmatch(line); m != nil {
			w.res.RTTAvgMs, _ = strconv.ParseFloat(m[1], 64)
			w.res.RTTMaxMs, _ = strconv.ParseFloat(m[3], 64)
		}
	}
}

// result checks that the run printed what the table needs.
func (w *uclientWatcher) result() (uclientResult, error) {
	if !w.ended || w.startCPU < 0 || w.endCPU < 0 {
		return w.res, fmt.Errorf("uclient printed no totals (or the server vanished): %w; last lines: %q", errParse, tail(w.lines, 8))
	}
	w.res.WindowSeconds = w.endAt.Sub(w.startAt).Seconds()
	w.res.ServerCPU = w.endCPU - w.startCPU
	return w.res, nil
}

func tail(xs []string, n int) []string {
	return xs[max(0, len(xs)-n):]
}
