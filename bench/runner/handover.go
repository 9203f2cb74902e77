package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/turnd/turnd/bench/procstat"
)

// The hand-over scenario: one stream of handoverRate messages/s through
// turnd beside N idle allocations, and `turnd upgrade` once the stream is
// steady. Each N upgrades the process the previous one left serving.
const (
	handoverRate   = 200
	handoverStream = 8 * time.Second
	// streamSteady is what turnload stream prints once the stream's first
	// second is back (cmd/turnload/stream.go).
	streamSteady = "turnload: stream: steady"
	// upgradeWait bounds `turnd upgrade`: turnd's own handover.timeout
	// (10 s by default) answers first.
	upgradeWait = 30 * time.Second
)

// handoverAllocations are the idle allocations held beside the stream, one
// upgrade each.
func handoverAllocations() []int { return []int{1000, 10000} }

// Handover is one upgrade of the hand-over scenario.
type Handover struct {
	Allocations int     `json:"allocations"` // idle ones, beside the stream's
	StreamRate  float64 `json:"stream_rate"`
	Sent        uint64  `json:"sent"`
	Received    uint64  `json:"received"`
	LossPct     float64 `json:"loss_pct"`
	// MaxGapMs is the stream's longest silence between two echoes; it
	// began GapFromUpgradeMs after `turnd upgrade` started.
	MaxGapMs         float64 `json:"max_gap_ms"`
	GapFromUpgradeMs float64 `json:"gap_from_upgrade_ms"`
	RTTMaxMs         float64 `json:"rtt_max_ms"`
	UpgradeMs        float64 `json:"upgrade_ms"`    // `turnd upgrade`, start to exit
	FrozenMs         float64 `json:"frozen_ms"`     // the old process's "frozen" figure
	Moved            int     `json:"moved"`         // allocations the old process handed over
	TookOver         int     `json:"took_over"`     // allocations the new process said it took over
	OldExitedMs      float64 `json:"old_exited_ms"` // from the upgrade's end until the old process was gone
	OldPID           int     `json:"old_pid"`
	NewPID           int     `json:"new_pid"`
	// SocketDrops is what the kernel dropped at turnd's own UDP sockets
	// across the upgrade (their drops in /proc/net/udp): the client-facing
	// ones and every relay socket, which the successor holds as the same
	// kernel sockets.
	SocketDrops int64 `json:"socket_drops"`
	// UDP counters of /proc/net/snmp, change over the run: every socket of
	// the machine's namespace counts, other work's and the load generator's too.
	RcvbufErrors int64   `json:"udp_rcvbuf_errors"`
	InErrors     int64   `json:"udp_in_errors"`
	SetupSeconds float64 `json:"setup_s"`
	// OpenFilesLimit is turnd's RLIMIT_NOFILE during the upgrade (see
	// roomForHandover).
	OpenFilesLimit uint64 `json:"open_files_limit"`
	Error          string `json:"error,omitempty"`
}

func handoverScenario() scenario {
	return scenario{name: "handover", only: "turnd", replacesServer: true, run: runHandovers,
		skip: "not run: coturn has no hand-over (an upgrade restarts it, or drains it as SIGTERM does turnd)",
		command: fmt.Sprintf("turnload stream --clients N --rate %d --duration %v; once steady: turnd upgrade --pid PID   # N = 1000, then 10000 on the successor",
			handoverRate, handoverStream)}
}

// runHandovers upgrades the server once per entry of handoverAllocations
// and stops the last successor (not the runner's child) itself.
func runHandovers(ctx context.Context, e *env, s *server) (Row, error) {
	var row Row
	cur, err := watchPID(s.pid())
	if err != nil {
		return row, err
	}
	defer func() {
		if st, err := procstat.Read(cur.pid); err == nil {
			row.PeakRSSKB = max(row.PeakRSSKB, st.HWMKB)
		}
		cur.stop(s.kind.stopSignal)
	}()
	for _, n := range handoverAllocations() {
		fmt.Fprintf(e.log, "bench:   %d idle allocations, a %d/s stream, turnd upgrade --pid %d\n", n, handoverRate, cur.pid)
		h, next, err := handoverOnce(ctx, e, s, cur, n)
		if err != nil {
			h.Error = err.Error()
		}
		row.Handovers = append(row.Handovers, h)
		row.LossPct = max(row.LossPct, h.LossPct)
		if next != nil {
			cur.stop(s.kind.stopSignal) // gone already unless the upgrade failed half-way
			cur = next
		}
		if err != nil {
			return row, err
		}
		fmt.Fprintf(e.log, "bench:   longest gap %.1f ms (began %.0f ms after the upgrade started), loss %.3f%%, upgrade %.0f ms, frozen %.1f ms, drops at turnd's sockets %d (machine RcvbufErrors +%d)\n",
			h.MaxGapMs, h.GapFromUpgradeMs, h.LossPct, h.UpgradeMs, h.FrozenMs, h.SocketDrops, h.RcvbufErrors)
	}
	return row, nil
}

// streamOutput is the part of turnload stream's --json report read here.
type streamOutput struct {
	Setup struct {
		OK      int     `json:"ok"`
		Failed  int     `json:"failed"`
		Seconds float64 `json:"seconds"`
	} `json:"setup"`
	Stream *struct {
		Sent               uint64  `json:"sent"`
		Received           uint64  `json:"received"`
		LossPct            float64 `json:"loss_pct"`
		MaxGapMs           float64 `json:"max_gap_ms"`
		MaxGapFromUnixNano int64   `json:"max_gap_from_unix_ns"`
		RTTMaxMs           float64 `json:"rtt_max_ms"`
	} `json:"stream"`
}

// handoverOnce runs one stream beside n idle allocations and upgrades old
// once the stream is steady; next is the successor, once known.
func handoverOnce(ctx context.Context, e *env, s *server, old *pidWatch, n int) (h Handover, next *pidWatch, err error) {
	h = Handover{Allocations: n, StreamRate: handoverRate, OldPID: old.pid}
	if h.OpenFilesLimit, err = roomForHandover(old.pid, n); err != nil {
		return h, nil, err
	}
	udp0, err := udpCounters()
	if err != nil {
		return h, nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, handoverStream+turnloadTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, e.turnload, "stream", "--clients", strconv.Itoa(n), "--concurrency", "100",
		"--rate", strconv.Itoa(handoverRate), "--duration", handoverStream.String(), "--server", s.addr(), "--json")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) } // it releases its allocations
	cmd.WaitDelay = stopWait
	var out bytes.Buffer
	cmd.Stdout = &out
	progress, err := cmd.StderrPipe()
	if err != nil {
		return h, nil, fmt.Errorf("pipe turnload: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return h, nil, fmt.Errorf("start turnload: %w", err)
	}
	steady, ended := watchProgress(progress, e.toolErr)
	select {
	case <-steady:
	case <-ended:
	}
	var upErr error
	var began time.Time
	select {
	case <-steady:
		drops0, err := socketDrops(old.pid)
		if err != nil {
			upErr = err
			break
		}
		began = time.Now()
		h.NewPID, upErr = upgrade(ctx, e.turnd, old.pid)
		h.UpgradeMs = ms(time.Since(began))
		if upErr == nil {
			next, upErr = h.afterUpgrade(old, drops0)
		} else if drops, err := socketDrops(old.pid); err == nil {
			h.SocketDrops = drops - drops0 // the old process serves on
		}
	default:
		upErr = fmt.Errorf("turnload stream ended before its stream was steady: %w", errParse)
	}
	<-ended
	runErr := cmd.Wait()
	// The stream is measured across a failed upgrade too: nothing may change.
	var rep streamOutput
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil || rep.Stream == nil {
		return h, next, errors.Join(upErr, fmt.Errorf("decode turnload stream report (%w): %w", runErr, errParse))
	}
	st := rep.Stream
	h.Sent, h.Received, h.LossPct, h.MaxGapMs, h.RTTMaxMs = st.Sent, st.Received, st.LossPct, st.MaxGapMs, st.RTTMaxMs
	if !began.IsZero() {
		h.GapFromUpgradeMs = float64(st.MaxGapFromUnixNano-began.UnixNano()) / 1e6
	}
	h.SetupSeconds = rep.Setup.Seconds
	if upErr != nil {
		return h, next, upErr
	}
	if rep.Setup.OK != n {
		return h, next, fmt.Errorf("turnload held %d of %d idle allocations: %w", rep.Setup.OK, n, errParse)
	}
	udp1, err := udpCounters()
	if err != nil {
		return h, next, err
	}
	h.RcvbufErrors, h.InErrors = udp1["RcvbufErrors"]-udp0["RcvbufErrors"], udp1["InErrors"]-udp0["InErrors"]
	if err := readHandoverLog(s.proc.logPath(), &h); err != nil {
		return h, next, err
	}
	return h, next, runErr
}

// afterUpgrade watches the successor, waits for the old process to exit
// and reads the drops at turnd's sockets, while every allocation is still
// held: turnload's release at the end closes their relay sockets, and the
// kernel forgets a closed socket's count.
func (h *Handover) afterUpgrade(old *pidWatch, drops0 int64) (*pidWatch, error) {
	upgraded := time.Now()
	next, err := watchPID(h.NewPID)
	if err != nil {
		return nil, err
	}
	if !old.wait(10 * time.Second) {
		return next, fmt.Errorf("the old turnd (pid %d) still runs 10s after handing over", old.pid)
	}
	h.OldExitedMs = ms(oldExit(old, upgraded))
	drops, err := socketDrops(h.NewPID)
	if err != nil {
		return next, err
	}
	h.SocketDrops = drops - drops0
	return next, nil
}

// roomForHandover raises turnd's open-file limit (prlimit) to what a
// hand-over of n allocations needs, as far as the hard limit allows (or
// beyond, with CAP_SYS_RESOURCE), and returns the limit in force. Each
// process holds two descriptors of every relay socket for a moment: the
// old one duplicates them to pass them, the new one duplicates what it
// received into its own sockets. The successor inherits the limit from the
// old process that starts it. A limit too low shows as the upgrade's error.
func roomForHandover(pid, n int) (uint64, error) {
	var lim unix.Rlimit
	if err := unix.Prlimit(pid, unix.RLIMIT_NOFILE, nil, &lim); err != nil {
		return 0, fmt.Errorf("read turnd's open-file limit: %w", err)
	}
	need := uint64(2*(n+1) + 1024)
	if lim.Cur >= need {
		return lim.Cur, nil
	}
	for _, to := range []unix.Rlimit{{Cur: need, Max: max(lim.Max, need)}, {Cur: lim.Max, Max: lim.Max}} {
		if to.Cur > lim.Cur && unix.Prlimit(pid, unix.RLIMIT_NOFILE, &to, nil) == nil {
			return to.Cur, nil
		}
	}
	return lim.Cur, nil
}

// watchProgress copies turnload's stderr to w and closes steady when the
// stream is steady, ended when turnload closed its stderr.
func watchProgress(r io.Reader, w io.Writer) (steady, ended chan struct{}) {
	steady, ended = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(ended)
		sc := bufio.NewScanner(r)
		seen := false
		for sc.Scan() {
			fmt.Fprintln(w, sc.Text())
			if !seen && sc.Text() == streamSteady {
				seen = true
				close(steady)
			}
		}
	}()
	return steady, ended
}

// upgrade runs `turnd upgrade --pid pid` and returns the new PID, which
// it prints alone on its last line.
func upgrade(ctx context.Context, turnd string, pid int) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, upgradeWait)
	defer cancel()
	var out, errb bytes.Buffer
	cmd := exec.CommandContext(ctx, turnd, "upgrade", "--pid", strconv.Itoa(pid))
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return 0, fmt.Errorf("turnd upgrade --pid %d: %w: %s", pid, err, strings.TrimSpace(errb.String()))
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	newPID, err := strconv.Atoi(strings.TrimSpace(lines[len(lines)-1]))
	if err != nil || newPID <= 0 {
		return 0, fmt.Errorf("turnd upgrade printed %q, not a PID on its last line: %w", out.String(), errParse)
	}
	return newPID, nil
}

// oldExit is how long after the upgrade the old process was gone: its
// exit time from /proc is gone with it, so the poller's moment stands in.
func oldExit(old *pidWatch, upgraded time.Time) time.Duration {
	return max(0, old.goneAt.Sub(upgraded))
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
