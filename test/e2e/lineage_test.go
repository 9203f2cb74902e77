package e2e

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// lineage is a turnd the test started and every successor it handed over
// to. A successor inherits its predecessor's stderr, so they all write one
// log stream; each is a process of its own, and only the first is a child
// of the test.
type lineage struct {
	t   *testing.T
	log *turnd // the shared log; its done closes once every process has closed the stream
	bin string // the executable the first process was started from

	mu    sync.Mutex
	procs []*proc // in order of start; the last one serves
}

// proc is one process of a lineage, watched through a pidfd so that a wait
// or a kill reaches that very process, never a reused PID.
type proc struct {
	pid  int
	fd   int
	gone chan struct{}
	cmd  *exec.Cmd // the process the test started, whose exit code it reads; nil for a successor
	err  error     // from cmd.Wait, valid once gone is closed
}

// startUpgradable starts turnd on the config file at path as the first of
// a lineage and returns once it serves.
func startUpgradable(t *testing.T, cfgPath string) *lineage {
	t.Helper()
	l := launchLineage(t, turndBin, cfgPath)
	l.awaitServing()
	return l
}

// launchLineage starts bin with args and --config path, its log on a pipe
// its successors inherit, and does not wait for it to serve (a process
// started with --take-over may say "took over" instead).
func launchLineage(t *testing.T, bin, path string, args ...string) *lineage {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, append(append([]string{}, args...), "--config", path)...)
	cmd.Stderr = w
	// Own process group: a test's Ctrl-C must not reach turnd as a drain.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close() // the processes hold the only write ends: the stream ends when the last one exits
	first := &proc{pid: cmd.Process.Pid, gone: make(chan struct{}), cmd: cmd}
	// A child is not reaped before Wait, so its PID cannot be reused yet.
	if first.fd, err = unix.PidfdOpen(first.pid, 0); err != nil {
		t.Fatalf("pidfd of turnd %d: %v", first.pid, err)
	}
	go func() { first.err = cmd.Wait(); close(first.gone) }()

	log := &turnd{t: t, cmd: cmd, cfg: path, done: make(chan struct{}), added: make(chan struct{})}
	go func() { log.scan(r); close(log.done) }()
	l := &lineage{t: t, log: log, bin: bin, procs: []*proc{first}}
	t.Cleanup(func() {
		l.mu.Lock()
		procs := append([]*proc{}, l.procs...)
		l.mu.Unlock()
		for i := len(procs) - 1; i >= 0; i-- {
			procs[i].stop()
		}
		// Every process the test knows of is gone: one still writing the
		// log is a successor turnd started and never stopped.
		select {
		case <-log.done:
		case <-time.After(5 * time.Second):
			t.Errorf("turnd's log stream is still open after every known turnd exited: a successor left running")
		}
		r.Close()
		if t.Failed() {
			t.Logf("turnd log (every process of the lineage):\n%s", log.logText())
		}
	})
	return l
}

// awaitServing waits for the first "turnd serving" line and takes the
// listener addresses from it: they move with the sockets, so they are
// every successor's too.
func (l *lineage) awaitServing() {
	l.t.Helper()
	line := l.log.waitLog("turnd serving", 10*time.Second)
	l.log.UDP, l.log.TCP, l.log.TLS = first(line["udp"]), first(line["tcp"]), first(line["tls"])
	l.log.HTTP, _ = line["http"].(string)
}

// serving is the newest process of the lineage.
func (l *lineage) serving() *proc {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.procs[len(l.procs)-1]
}

// upgrade runs `turnd upgrade --pid` on the serving process, requires it to
// succeed and returns the successor it names.
func (l *lineage) upgrade() *proc {
	l.t.Helper()
	return l.upgradeWith("--pid", strconv.Itoa(l.serving().pid))
}

// upgradeWith is upgrade with the command's arguments (how it names the
// process: --pid, --pidfile or --config).
func (l *lineage) upgradeWith(args ...string) *proc {
	l.t.Helper()
	old := l.serving()
	out := runUpgrade(l.t, args...)
	if out.code != 0 {
		l.t.Fatalf("turnd upgrade %v: exit %d after %v\nstdout:\n%s\nstderr:\n%s",
			args, out.code, out.took, out.stdout, out.stderr)
	}
	pid, err := lastLinePID(out.stdout)
	if err != nil || pid == old.pid {
		l.t.Fatalf("turnd upgrade printed no new PID on its last line (%v):\n%s", err, out.stdout)
	}
	l.t.Logf("turnd upgrade: %d -> %d in %v", old.pid, pid, out.took.Round(time.Millisecond))
	return l.adopt(pid)
}

// adopt watches pid, a successor, as the lineage's serving process.
func (l *lineage) adopt(pid int) *proc {
	l.t.Helper()
	p := watchPID(l.t, pid)
	l.mu.Lock()
	l.procs = append(l.procs, p)
	l.mu.Unlock()
	return p
}

// watchPID opens a pidfd on pid, a process the test did not start, and
// watches it until it exits; the caller stops it.
func watchPID(t *testing.T, pid int) *proc {
	t.Helper()
	p, err := tryWatchPID(pid)
	if err != nil {
		t.Fatalf("process %d: %v", pid, err)
	}
	return p
}

// tryWatchPID is watchPID for a process that may be gone already (ESRCH).
func tryWatchPID(pid int) (*proc, error) {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return nil, err
	}
	p := &proc{pid: pid, fd: fd, gone: make(chan struct{})}
	go func() {
		// Not a child: its exit shows as the pidfd turning readable.
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		for {
			if _, err := unix.Poll(fds, -1); !errors.Is(err, unix.EINTR) {
				break
			}
		}
		close(p.gone)
	}()
	return p, nil
}

// stop kills p if it still runs and waits for it (bounded), then closes
// its pidfd.
func (p *proc) stop() {
	if !p.exited() {
		_ = unix.PidfdSendSignal(p.fd, unix.SIGKILL, nil, 0)
		select {
		case <-p.gone:
		case <-time.After(5 * time.Second):
		}
	}
	if p.exited() {
		unix.Close(p.fd)
	}
}

func (p *proc) exited() bool {
	select {
	case <-p.gone:
		return true
	default:
		return false
	}
}

// waitGone waits for p to exit and returns its exit code, or -1 for a
// process the test did not start (whose code only its parent sees).
func (p *proc) waitGone(t *testing.T, timeout time.Duration, log *turnd) int {
	t.Helper()
	select {
	case <-p.gone:
	case <-time.After(timeout):
		t.Fatalf("turnd %d still running after %v; log:\n%s", p.pid, timeout, log.logText())
	}
	if p.cmd == nil {
		return -1
	}
	var ee *exec.ExitError
	if errors.As(p.err, &ee) {
		return ee.ExitCode()
	}
	return 0
}

// upgradeRun is what one `turnd upgrade` said.
type upgradeRun struct {
	code           int
	stdout, stderr string
	took           time.Duration
}

// runUpgrade runs `turnd upgrade` with args to completion (bounded: 60 s).
func runUpgrade(t *testing.T, args ...string) upgradeRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, turndBin, append([]string{"upgrade"}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	began := time.Now()
	err := cmd.Run()
	out := upgradeRun{stdout: stdout.String(), stderr: stderr.String(), took: time.Since(began)}
	var ee *exec.ExitError
	switch {
	case ctx.Err() != nil:
		t.Fatalf("turnd upgrade %v did not finish within 60s:\n%s\n%s", args, out.stdout, out.stderr)
	case errors.As(err, &ee):
		out.code = ee.ExitCode()
	case err != nil:
		t.Fatalf("turnd upgrade: %v", err)
	}
	return out
}

// lastLinePID is the PID alone on the last line of `turnd upgrade`'s output.
func lastLinePID(stdout string) (int, error) {
	lines := strings.Split(strings.TrimRight(stdout, "\n"), "\n")
	return strconv.Atoi(strings.TrimSpace(lines[len(lines)-1]))
}

// waitLogFrom waits for a line whose msg contains substr at index from or
// later, and returns it with its index: a lineage logs the same message
// once per process.
func (p *turnd) waitLogFrom(from int, substr string, timeout time.Duration) (map[string]any, int) {
	p.t.Helper()
	deadline := time.After(timeout)
	for seen := from; ; {
		p.mu.Lock()
		for ; seen < len(p.lines); seen++ {
			if msg, _ := p.lines[seen]["msg"].(string); strings.Contains(msg, substr) {
				l := p.lines[seen]
				p.mu.Unlock()
				return l, seen
			}
		}
		added := p.added
		p.mu.Unlock()
		select {
		case <-added:
		case <-p.done:
			if seen == p.logCount() {
				p.t.Fatalf("every turnd exited before logging %q; log:\n%s", substr, p.logText())
			}
		case <-deadline:
			p.t.Fatalf("turnd did not log %q within %v; log:\n%s", substr, timeout, p.logText())
		}
	}
}

// countLogFrom counts the lines from index from on whose msg contains substr.
func (p *turnd) countLogFrom(from int, substr string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for i := from; i < len(p.lines); i++ {
		if msg, _ := p.lines[i]["msg"].(string); strings.Contains(msg, substr) {
			n++
		}
	}
	return n
}
