package e2e

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// turnd is a running turnd process with its structured log.
type turnd struct {
	t    *testing.T
	cmd  *exec.Cmd
	cfg  string // config file path
	done chan struct{}
	err  error // from Wait, valid after done

	mu    sync.Mutex
	lines []map[string]any
	raw   []string
	added chan struct{} // closed and replaced on every new line

	UDP, TCP, TLS string // first listener address of each kind
	HTTP          string
}

func startTurndFile(t *testing.T, path string) *turnd {
	t.Helper()
	p, _ := launch(t, path, launchOptions{})
	return p
}

// launchOptions vary how a test starts turnd.
type launchOptions struct {
	env     []string // added to the test's environment
	wrapper []string // a command that execs turnd (e.g. prlimit), so the PID signalled is turnd's
}

// launch starts turnd on the config file at path, waits for its "turnd
// serving" line and returns it with the read end of its stderr pipe (a test
// may close it to make turnd's log unwritable).
func launch(t *testing.T, path string, o launchOptions) (*turnd, io.Closer) {
	t.Helper()
	p, stderr := spawn(t, path, o)
	line := p.waitLog("turnd serving", 10*time.Second)
	p.UDP, p.TCP, p.TLS = first(line["udp"]), first(line["tcp"]), first(line["tls"])
	p.HTTP, _ = line["http"].(string)
	return p, stderr
}

// spawn starts turnd as launch does but returns at once, for a test that
// wants it not to serve.
func spawn(t *testing.T, path string, o launchOptions) (*turnd, io.Closer) {
	t.Helper()
	p := &turnd{t: t, cfg: path, done: make(chan struct{}), added: make(chan struct{})}
	argv := append(append([]string{}, o.wrapper...), turndBin, "--config", path)
	p.cmd = exec.Command(argv[0], argv[1:]...)
	if len(o.env) > 0 {
		p.cmd.Env = append(os.Environ(), o.env...)
	}
	stderr, err := p.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	// Own process group: a test's Ctrl-C must not reach turnd as a drain.
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go p.collect(stderr)
	t.Cleanup(p.kill)
	return p, stderr
}

func first(v any) string {
	if xs, ok := v.([]any); ok && len(xs) > 0 {
		s, _ := xs[0].(string)
		return s
	}
	return ""
}

// collect parses turnd's JSON log lines until it exits.
func (p *turnd) collect(r io.Reader) {
	p.scan(r)
	p.err = p.cmd.Wait()
	close(p.done)
}

// scan parses JSON log lines from r until it ends.
func (p *turnd) scan(r io.Reader) {
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
}

// waitLog waits for a log line whose msg contains substr and returns it.
func (p *turnd) waitLog(substr string, timeout time.Duration) map[string]any {
	p.t.Helper()
	deadline := time.After(timeout)
	seen := 0
	for {
		p.mu.Lock()
		for ; seen < len(p.lines); seen++ {
			if msg, _ := p.lines[seen]["msg"].(string); strings.Contains(msg, substr) {
				l := p.lines[seen]
				p.mu.Unlock()
				return l
			}
		}
		added := p.added
		p.mu.Unlock()
		select {
		case <-added:
		case <-p.done:
			p.mu.Lock()
			n := len(p.lines)
			p.mu.Unlock()
			if seen == n {
				p.t.Fatalf("turnd exited (%v) before logging %q; log:\n%s", p.err, substr, p.logText())
			}
		case <-deadline:
			p.t.Fatalf("turnd did not log %q within %v; log:\n%s", substr, timeout, p.logText())
		}
	}
}

// hasLog reports whether a line whose msg contains substr was logged.
func (p *turnd) hasLog(substr string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, l := range p.lines {
		if msg, _ := l["msg"].(string); strings.Contains(msg, substr) {
			return true
		}
	}
	return false
}

func (p *turnd) logText() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.raw, "\n")
}

// signal sends sig to turnd.
func (p *turnd) signal(sig syscall.Signal) {
	p.t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		p.t.Fatalf("signal %v: %v", sig, err)
	}
}

// waitExit waits for turnd to exit and returns its exit code.
func (p *turnd) waitExit(timeout time.Duration) int {
	p.t.Helper()
	select {
	case <-p.done:
	case <-time.After(timeout):
		p.t.Fatalf("turnd still running after %v; log:\n%s", timeout, p.logText())
	}
	var ee *exec.ExitError
	if errors.As(p.err, &ee) {
		return ee.ExitCode()
	}
	return 0
}

// exited reports whether turnd has exited.
func (p *turnd) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// kill stops turnd by PID if a test left it running.
func (p *turnd) kill() {
	if !p.exited() {
		_ = p.cmd.Process.Kill()
		<-p.done
	}
	if p.t.Failed() {
		p.t.Logf("turnd log:\n%s", p.logText())
	}
}

// get fetches an HTTP endpoint of turnd.
func (p *turnd) get(path string) (int, string) {
	p.t.Helper()
	resp, err := http.Get("http://" + p.HTTP + path)
	if err != nil {
		p.t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// status fetches /status.
func (p *turnd) status() map[string]any {
	p.t.Helper()
	_, body := p.get("/status")
	var m map[string]any
	if err := json.Unmarshal([]byte(body), &m); err != nil {
		p.t.Fatalf("/status: %v: %s", err, body)
	}
	return m
}

// metric returns the value of one sample line of /metrics, e.g.
// `turnd_allocations_rejected_total{reason="draining"}`.
func (p *turnd) metric(sample string) float64 {
	p.t.Helper()
	_, body := p.get("/metrics")
	for _, l := range strings.Split(body, "\n") {
		if rest, ok := strings.CutPrefix(l, sample+" "); ok {
			var v float64
			fmt.Sscan(rest, &v)
			return v
		}
	}
	p.t.Fatalf("metric %s not found", sample)
	return 0
}

// waitLogCount waits until n lines whose msg contains substr were logged.
func (p *turnd) waitLogCount(substr string, n int, timeout time.Duration) {
	p.t.Helper()
	deadline := time.After(timeout)
	for {
		p.mu.Lock()
		count := 0
		for _, l := range p.lines {
			if msg, _ := l["msg"].(string); strings.Contains(msg, substr) {
				count++
			}
		}
		added := p.added
		p.mu.Unlock()
		if count >= n {
			return
		}
		select {
		case <-added:
		case <-p.done:
			p.t.Fatalf("turnd exited with %d/%d %q lines; log:\n%s", count, n, substr, p.logText())
		case <-deadline:
			p.t.Fatalf("%d/%d %q lines after %v; log:\n%s", count, n, substr, timeout, p.logText())
		}
	}
}

// logTime returns the time stamp of a log line.
func logTime(t *testing.T, line map[string]any) time.Time {
	t.Helper()
	s, _ := line["time"].(string)
	ts, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t.Fatalf("log line without time: %v", line)
	}
	return ts
}
