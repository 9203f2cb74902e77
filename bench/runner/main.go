package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/turnd/turnd/bench/procstat"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

// run returns 0 when every scenario produced its rows (targets missed are
// results, not failures), 1 when something could not be measured, 2 for a
// bad command line.
func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("runner", flag.ContinueOnError)
	fs.SetOutput(stderr)
	turndBin := fs.String("turnd", "bin/turnd", "turnd binary")
	coturnBin := fs.String("coturn", "turnserver", "coturn's turnserver binary")
	turnloadBin := fs.String("turnload", "bin/turnload", "turnload binary")
	uclientBin := fs.String("uclient", "turnutils_uclient", "coturn's turnutils_uclient")
	peerBin := fs.String("peer", "turnutils_peer", "coturn's turnutils_peer (uclient's echo peer)")
	out := fs.String("out", "bench/results/latest.json", "where to write the results as JSON")
	only := fs.String("scenarios", "", "comma-separated scenarios to run (default all)")
	render := fs.String("render", "", "print the tables from an earlier results file and exit")
	update := fs.Bool("update", false, "replace only the rows of the scenarios run in the existing -out file (after a disturbed run)")
	keep := fs.Bool("keep", false, "keep the work directory (configs, server logs)")
	maxBPS := fs.Int64("max-bps", 0, "bandwidth limit per allocation each way, bit/s, given to both servers (0: none)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *render != "" {
		res, err := readResults(*render)
		if err != nil {
			fmt.Fprintln(stderr, "bench:", err)
			return 1
		}
		printAll(stdout, res)
		return 0
	}
	var chosen []scenario
	for _, sc := range scenarios() {
		if *only == "" || contains(strings.Split(*only, ","), sc.name) {
			chosen = append(chosen, sc)
		}
	}
	if len(chosen) == 0 {
		fmt.Fprintf(stderr, "bench: no scenario matches %q\n", *only)
		return 2
	}
	bins := map[string]*string{"turnd": turndBin, "coturn": coturnBin, "turnload": turnloadBin, "uclient": uclientBin, "peer": peerBin}
	for name, p := range bins {
		abs, err := exec.LookPath(*p)
		if err != nil {
			fmt.Fprintf(stderr, "bench: %s: %v (make build; scripts/install-test-tools.sh for coturn)\n", name, err)
			return 2
		}
		*p, _ = filepath.Abs(abs)
	}

	// SIGINT/SIGTERM stop the run; children are stopped by PID on the way out.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	dir, err := os.MkdirTemp("", "turnd-bench-")
	if err != nil {
		fmt.Fprintln(stderr, "bench:", err)
		return 1
	}
	if *keep {
		fmt.Fprintf(stderr, "bench: work directory %s\n", dir)
	} else {
		defer os.RemoveAll(dir)
	}
	toolErr, err := os.Create(filepath.Join(dir, "tools.err"))
	if err != nil {
		fmt.Fprintln(stderr, "bench:", err)
		return 1
	}
	defer toolErr.Close()

	peerPort, err := freePort(true)
	if err != nil {
		fmt.Fprintln(stderr, "bench:", err)
		return 1
	}
	peer, err := start("turnutils_peer", filepath.Join(dir, "peer.out"), *peerBin, "-L", "127.0.0.1", "-p", fmt.Sprint(peerPort))
	if err != nil {
		fmt.Fprintln(stderr, "bench:", err)
		return 1
	}
	defer peer.stop(syscall.SIGTERM)

	e := &env{turnd: *turndBin, coturn: *coturnBin, turnload: *turnloadBin, uclient: *uclientBin, peer: peer, peerBin: *peerBin, peerPort: peerPort, opts: serverOpts{cpus: runtime.NumCPU(), maxBPS: *maxBPS}, log: stderr, toolErr: toolErr}
	res := &Results{Machine: describeMachine(*turndBin, *coturnBin), Started: time.Now().UTC(), MaxBPS: *maxBPS}
	servers := map[string]string{"turnd": *turndBin, "coturn": *coturnBin}
	failed := false
	for _, sc := range chosen {
		if sc.rows != nil && ctx.Err() == nil {
			for _, row := range sc.rows(ctx, e, dir) {
				failed = failed || row.Error != ""
				res.Rows = append(res.Rows, row)
			}
			continue
		}
		for _, kind := range serverKinds() {
			if ctx.Err() != nil {
				break
			}
			if sc.only != "" && sc.only != kind.name {
				res.Rows = append(res.Rows, Row{Scenario: sc.name, Server: kind.name, Command: sc.command, Notes: []string{sc.skip}})
				continue
			}
			row := runOne(ctx, e, sc, kind, servers[kind.name], dir)
			failed = failed || row.Error != ""
			res.Rows = append(res.Rows, row)
		}
	}
	res.Seconds = time.Since(res.Started).Seconds()
	if *update {
		old, err := readResults(*out)
		if err != nil {
			fmt.Fprintln(stderr, "bench:", err)
			return 1
		}
		res = merge(old, res)
	}
	res.Targets = targets(res.Rows)
	if err := os.MkdirAll(filepath.Dir(*out), 0o755); err == nil {
		err = res.write(*out)
		if err != nil {
			fmt.Fprintln(stderr, "bench:", err)
			failed = true
		}
	}
	printAll(stdout, res)
	if ctx.Err() != nil || failed {
		return 1
	}
	return 0
}

// maxAttempts bounds how often one scenario runs on one server.
const maxAttempts = 3

// runOne runs a scenario on a fresh server. A row disturbed by other work
// on the machine is measured again (the least disturbed attempt is kept);
// a failed row is measured again only for scenarios that may fail for
// reasons outside the server (scenario.attempts). The row notes both.
func runOne(ctx context.Context, e *env, sc scenario, kind serverKind, bin, dir string) Row {
	var notes []string
	var best *Row
	bestAttempt := 0
	for attempt := 1; attempt <= maxAttempts && ctx.Err() == nil; attempt++ {
		row := attemptOne(ctx, e, sc, kind, bin, dir)
		if row.Error != "" {
			if attempt >= max(1, sc.attempts) {
				if best != nil {
					break
				}
				row.Notes = notes
				return row
			}
			notes = append(notes, fmt.Sprintf("attempt %d failed: %s", attempt, row.Error))
			continue
		}
		if best == nil || row.otherCPUs() < best.otherCPUs() {
			best, bestAttempt = &row, attempt
		}
		if !sc.cpuSensitive || row.otherCPUs() <= disturbedCPUs {
			break
		}
		notes = append(notes, fmt.Sprintf("attempt %d disturbed: other work used %.2f CPUs", attempt, row.otherCPUs()))
		fmt.Fprintf(e.log, "bench:   disturbed by other work (%.2f CPUs): measuring again\n", row.otherCPUs())
	}
	if best == nil {
		return Row{Scenario: sc.name, Server: kind.name, Command: sc.command, Error: "interrupted", Notes: notes}
	}
	if len(notes) > 0 {
		notes = append(notes, fmt.Sprintf("kept attempt %d", bestAttempt))
	}
	best.Notes = notes
	return *best
}

// otherCPU is the CPU time user processes other than exclude (the server,
// uclient's echo peer, the runner) used between two listings: processes in
// both count their growth, processes started since count all of theirs.
// The load tools have exited by the second listing, so they do not count.
//
// Why not machine busy time minus the processes measured: the kernel
// charges softirq work done on a process's behalf (on loopback, most packet
// delivery) both to that process and to /proc/stat's softirq time, and
// per-process times are not tick-sampled like /proc/stat's, so that
// difference came out several CPU-seconds negative on every row and hid any
// real disturbance.
func otherCPU(before, after map[int]time.Duration, exclude ...int) time.Duration {
	var sum time.Duration
	for pid, cpu := range after {
		if slices.Contains(exclude, pid) {
			continue
		}
		if d := cpu - before[pid]; d > 0 {
			sum += d
		}
	}
	return sum
}

// attemptOne starts a fresh server, runs the scenario, reads the server's
// peak RSS and stops it.
func attemptOne(ctx context.Context, e *env, sc scenario, kind serverKind, bin, dir string) Row {
	fmt.Fprintf(e.log, "bench: %s on %s\n", sc.name, kind.name)
	before := waitQuiet(ctx, e, quietMaxWait)
	t0 := time.Now()
	srv, err := startServer(kind, bin, dir, e.opts)
	if err != nil {
		return Row{Scenario: sc.name, Server: kind.name, Command: sc.command, Error: err.Error()}
	}
	defer srv.stop()
	m0, _ := readCPUTimes()
	o0, _ := procstat.UserProcesses()
	r0 := time.Now()
	row, err := sc.run(ctx, e, srv)
	row.Seconds = time.Since(r0).Seconds()
	m1, _ := readCPUTimes()
	o1, _ := procstat.UserProcesses()
	row.Scenario, row.Server, row.Command = sc.name, kind.name, sc.command
	row.BusyBeforeCPUs = before
	row.IRQCPUSeconds = float64(m1.irq-m0.irq) / userHZ
	row.OtherCPUSeconds = otherCPU(o0, o1, append([]int{srv.proc.pid(), e.peer.pid(), os.Getpid()}, e.ownPIDs...)...).Seconds()
	if s, serr := srv.sample(); serr == nil {
		row.PeakRSSKB = s.HWMKB
	}
	if srv.proc.exited() && !sc.replacesServer {
		err = fmt.Errorf("%s exited during the scenario (see %s.out)", kind.name, kind.name)
	}
	if err != nil {
		row.Error = err.Error()
		fmt.Fprintf(e.log, "bench:   error: %v\n", err)
	}
	if k := keyFigure(row); k != 0 {
		fmt.Fprintf(e.log, "bench:   %.0fs: %s %.1f\n", time.Since(t0).Seconds(), keyName(sc.name), k)
	} else {
		fmt.Fprintf(e.log, "bench:   %.0fs: %.0f msg/s delivered, loss %.3f%%, %.2f µs CPU/pkt\n",
			time.Since(t0).Seconds(), row.DeliveredRate, row.LossPct, row.CPUPerPacketUS)
	}
	return row
}

func printAll(w io.Writer, res *Results) {
	m := res.Machine
	fmt.Fprintf(w, "\n%d CPUs (%s), Linux %s, %s; %s; coturn %s; %.0f s\n\n", m.CPUs, m.CPUModel, m.Kernel, m.GoVersion,
		m.TurndVersion, m.CoturnVer, res.Seconds)
	renderTable(w, res)
	for _, r := range res.Rows {
		for _, n := range r.Notes {
			fmt.Fprintf(w, "\nNote (%s on %s): %s", r.Scenario, r.Server, n)
		}
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w)
	if slices.ContainsFunc(res.Targets, func(t Target) bool { return t.Note != "not measured" }) {
		renderTargets(w, res.Targets) // not for a run of the fleet scenario alone
	}
	if _, ok := rowOf(res.Rows, "saturation", "turnd"); ok {
		fmt.Fprintln(w)
		renderSteps(w, res.Rows)
	}
	if r, ok := rowOf(res.Rows, "handover", "turnd"); ok && len(r.Handovers) > 0 {
		fmt.Fprintln(w)
		renderHandovers(w, r)
	}
	if _, ok := rowOf(res.Rows, "netns", "coturn"); ok {
		fmt.Fprintln(w)
		renderNetns(w, res.Rows)
	}
	if slices.ContainsFunc(res.Rows, func(r Row) bool { return r.Scenario == "fleet" }) {
		fmt.Fprintln(w)
		renderFleet(w, res.Rows)
	}
}

// merge replaces old's rows of every scenario in fresh (keeping old's
// order, adding new scenarios at the end) and notes the update.
func merge(old, fresh *Results) *Results {
	ran := map[string]bool{}
	for _, r := range fresh.Rows {
		ran[r.Scenario] = true
	}
	out := *old
	out.Rows = nil
	added := map[string]bool{}
	for _, r := range old.Rows {
		if !ran[r.Scenario] {
			out.Rows = append(out.Rows, r)
			continue
		}
		if added[r.Scenario] {
			continue
		}
		added[r.Scenario] = true
		for _, f := range fresh.Rows {
			if f.Scenario != r.Scenario {
				continue
			}
			f.Notes = append(f.Notes, "measured again on "+fresh.Started.Format(time.RFC3339))
			if o, ok := rowOf(old.Rows, f.Scenario, f.Server); ok && o.Error != "" {
				f.Notes = append(f.Notes, "the replaced row had failed: "+o.Error)
			}
			out.Rows = append(out.Rows, f)
		}
	}
	for _, f := range fresh.Rows {
		if !added[f.Scenario] {
			out.Rows = append(out.Rows, f)
		}
	}
	out.Seconds += fresh.Seconds
	return &out
}

func contains(xs []string, x string) bool {
	for _, v := range xs {
		if strings.TrimSpace(v) == x {
			return true
		}
	}
	return false
}
