package e2e

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// upgradeCommandTimeout bounds one `turnd upgrade`: the old process's
// handover.timeout (10 s by default) answers first.
const upgradeCommandTimeout = 20 * time.Second

// chain is a turnd and the successors `turnd upgrade` starts from it,
// one after another. A successor inherits its predecessor's stderr, so one
// pipe carries every generation's log: the embedded turnd reads it (its done
// closes once the last generation has exited, its err is then the first
// one's exit status) and each generation's own exit is watched on a pidfd.
type chain struct {
	*turnd
	wrapper []string      // runs a command where turnd runs (ip netns exec NS): the hand-over socket @turnd/pid/N is per network namespace
	gens    []*generation // oldest first; the last one serves
}

// generation is one process of a chain.
type generation struct {
	pid  int
	fd   int           // pidfd: a successor is not the test's child, and its PID must not be mistaken for a reused one
	gone chan struct{} // closed once the process has exited
}

// startChain starts turnd on the config at path, through wrapper (a
// command that execs turnd, such as ip netns exec) if not empty, and waits
// for it to serve.
func startChain(t *testing.T, path string, wrapper []string) *chain {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	p := &turnd{t: t, cfg: path, done: make(chan struct{}), added: make(chan struct{})}
	argv := append(append([]string{}, wrapper...), turndBin, "--config", path)
	p.cmd = exec.Command(argv[0], argv[1:]...)
	p.cmd.Stderr = w // a file, not a pipe exec copies: Wait returns when the first generation exits
	// Own process group: a test's Ctrl-C must not reach turnd as a drain.
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	err = p.cmd.Start()
	_ = w.Close() // the generations hold the write end: the log ends with the last of them
	if err != nil {
		_ = r.Close()
		t.Fatal(err)
	}
	go func() {
		p.collect(r)
		_ = r.Close()
	}()
	l := &chain{turnd: p, wrapper: wrapper}
	t.Cleanup(l.stop)
	l.gens = append(l.gens, watchGeneration(t, p.cmd.Process.Pid))
	line := p.waitLog("turnd serving", 10*time.Second)
	p.UDP, p.TCP, p.TLS = first(line["udp"]), first(line["tcp"]), first(line["tls"])
	p.HTTP, _ = line["http"].(string)
	return l
}

// watchGeneration opens a pidfd on pid and closes gone when the process exits.
func watchGeneration(t *testing.T, pid int) *generation {
	t.Helper()
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		t.Fatalf("pidfd_open %d: %v", pid, err)
	}
	g := &generation{pid: pid, fd: fd, gone: make(chan struct{})}
	go func() {
		defer close(g.gone)
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		for {
			// A pidfd turns readable when its process exits.
			if _, err := unix.Poll(fds, -1); !errors.Is(err, unix.EINTR) {
				return
			}
		}
	}()
	return g
}

// exited reports whether the generation's process has ended.
func (g *generation) exited() bool {
	select {
	case <-g.gone:
		return true
	default:
		return false
	}
}

// signal sends sig to the generation's process.
func (g *generation) signal(t *testing.T, sig unix.Signal) {
	t.Helper()
	if err := unix.PidfdSendSignal(g.fd, sig, nil, 0); err != nil {
		t.Fatalf("signal %v to pid %d: %v", sig, g.pid, err)
	}
}

// serving is the newest generation.
func (l *chain) serving() *generation { return l.gens[len(l.gens)-1] }

// upgrade runs `turnd upgrade --pid N` for the serving generation, where
// turnd runs, and returns the successor once it has logged "took over",
// with the command's wall time from its start to its exit.
func (l *chain) upgrade() (*generation, time.Duration) {
	t := l.t
	t.Helper()
	cur := l.serving()
	argv := append(append([]string{}, l.wrapper...), turndBin, "upgrade", "--pid", strconv.Itoa(cur.pid))
	ctx, cancel := context.WithTimeout(context.Background(), upgradeCommandTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	began := time.Now()
	err := cmd.Run()
	took := time.Since(began)
	if err != nil {
		t.Fatalf("turnd upgrade --pid %d: %v after %v\nstdout: %s\nstderr: %s\nlog:\n%s", cur.pid, err,
			took.Round(time.Millisecond), stdout.String(), stderr.String(), l.logText())
	}
	// The new PID is alone on the last line.
	out := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	pid, err := strconv.Atoi(strings.TrimSpace(out[len(out)-1]))
	if err != nil || pid <= 0 || pid == cur.pid {
		t.Fatalf("turnd upgrade --pid %d printed %q: want the new PID on the last line", cur.pid, stdout.String())
	}
	g := watchGeneration(t, pid)
	l.gens = append(l.gens, g)
	l.waitLogCount("took over", len(l.gens)-1, 5*time.Second)
	return g, took
}

// waitGone waits for a generation to exit and returns how long that took.
func (l *chain) waitGone(g *generation, timeout time.Duration) time.Duration {
	l.t.Helper()
	began := time.Now()
	select {
	case <-g.gone:
	case <-time.After(timeout):
		l.t.Fatalf("pid %d still running after %v; log:\n%s", g.pid, timeout, l.logText())
	}
	return time.Since(began)
}

// stop kills every generation still running, by pidfd, and waits for the
// log to end.
func (l *chain) stop() {
	for _, g := range l.gens {
		if !g.exited() {
			_ = unix.PidfdSendSignal(g.fd, unix.SIGKILL, nil, 0) // a test that failed half-way
		}
	}
	for _, g := range l.gens {
		select {
		case <-g.gone:
			_ = unix.Close(g.fd)
		case <-time.After(5 * time.Second):
			l.t.Errorf("pid %d survived SIGKILL for 5s", g.pid)
		}
	}
	select {
	case <-l.done:
	case <-time.After(5 * time.Second):
		l.t.Errorf("turnd's log still open 5s after every generation was killed")
	}
	if l.t.Failed() {
		l.t.Logf("turnd log (every generation):\n%s", l.logText())
	}
}
