package deploytest

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// turndProc is a running turnd with its JSON log (the chart sets
// log.format: json), which tests read to follow its lifecycle.
type turndProc struct {
	t    *testing.T
	name string
	cmd  *exec.Cmd
	done chan struct{}
	// exitedAt and err are valid once done is closed.
	exitedAt time.Time
	err      error

	mu    sync.Mutex
	lines []map[string]any
	raw   []string
	added chan struct{} // closed and replaced on every new line
}

// startProc starts argv (turnd, possibly behind `ip netns exec`, which execs
// it, so the PID is turnd's) in its own process group, so a Ctrl-C of the
// test run never reaches it as a drain signal. It is killed by PID at
// cleanup if still running.
func startProc(t *testing.T, name string, argv, env []string) *turndProc {
	t.Helper()
	p := &turndProc{t: t, name: name, done: make(chan struct{}), added: make(chan struct{})}
	p.cmd = exec.Command(argv[0], argv[1:]...)
	p.cmd.Env = env
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stderr, err := p.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	p.cmd.Stdout = p.cmd.Stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	go p.collect(stderr)
	t.Cleanup(func() {
		p.kill()
		if t.Failed() {
			t.Logf("%s log:\n%s", name, p.logText())
		}
	})
	return p
}

func (p *turndProc) collect(r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		var m map[string]any
		if json.Unmarshal(sc.Bytes(), &m) != nil {
			m = map[string]any{"msg": sc.Text()}
		}
		p.mu.Lock()
		p.lines = append(p.lines, m)
		p.raw = append(p.raw, sc.Text())
		close(p.added)
		p.added = make(chan struct{})
		p.mu.Unlock()
	}
	p.err = p.cmd.Wait()
	p.exitedAt = time.Now()
	close(p.done)
}

// waitLogs waits until match holds for the log lines so far and returns
// the last line. Lines are only ever appended, so match sees a growing list.
func (p *turndProc) waitLogs(what string, timeout time.Duration, match func(lines []map[string]any) bool) map[string]any {
	p.t.Helper()
	deadline := time.After(timeout)
	for {
		p.mu.Lock()
		ok, added := match(p.lines), p.added
		var last map[string]any
		if len(p.lines) > 0 {
			last = p.lines[len(p.lines)-1]
		}
		p.mu.Unlock()
		if ok {
			return last
		}
		select {
		case <-added:
		case <-p.done:
			p.mu.Lock()
			ok = match(p.lines)
			p.mu.Unlock()
			if !ok {
				p.t.Fatalf("%s exited (%v) before logging %s; log:\n%s", p.name, p.err, what, p.logText())
			}
		case <-deadline:
			p.t.Fatalf("%s did not log %s within %v; log:\n%s", p.name, what, timeout, p.logText())
		}
	}
}

// mark is the number of lines logged so far, for matching only later ones.
func (p *turndProc) mark() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.lines)
}

// waitLog waits for a line whose msg contains substr and returns it.
func (p *turndProc) waitLog(substr string, timeout time.Duration) map[string]any {
	p.t.Helper()
	var found map[string]any
	p.waitLogs(`"`+substr+`"`, timeout, func(lines []map[string]any) bool {
		for _, l := range lines {
			if msg, _ := l["msg"].(string); strings.Contains(msg, substr) {
				found = l
				return true
			}
		}
		return false
	})
	return found
}

// allocationsOf counts the "allocation created" and "allocation deleted"
// lines for user; lines must be the log so far.
func allocationsOf(lines []map[string]any, user string) (created, live int) {
	for _, l := range lines {
		if u, _ := l["user"].(string); u != user {
			continue
		}
		switch l["msg"] {
		case "allocation created":
			created++
			live++
		case "allocation deleted":
			live--
		}
	}
	return created, live
}

func (p *turndProc) logText() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.raw, "\n")
}

// signal sends sig to turnd's PID.
func (p *turndProc) signal(sig syscall.Signal) {
	p.t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		p.t.Fatalf("signal %v to %s: %v", sig, p.name, err)
	}
}

// waitExit waits up to timeout for turnd to exit and returns its exit code
// and when it exited; on timeout it kills it, as a kubelet does when the
// grace period runs out, and fails.
func (p *turndProc) waitExit(timeout time.Duration) (int, time.Time) {
	p.t.Helper()
	select {
	case <-p.done:
	case <-time.After(timeout):
		p.kill()
		p.t.Fatalf("%s still running %v after it was asked to stop: killed; log:\n%s", p.name, timeout, p.logText())
	}
	var ee *exec.ExitError
	if errors.As(p.err, &ee) {
		return ee.ExitCode(), p.exitedAt
	}
	if p.err != nil {
		p.t.Fatalf("%s: %v", p.name, p.err)
	}
	return 0, p.exitedAt
}

func (p *turndProc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// kill stops turnd by PID if it is still running.
func (p *turndProc) kill() {
	if !p.exited() {
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}
