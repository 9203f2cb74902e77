package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/turnd/turnd/internal/testturn"
)

// lineReader hands out the lines a child process prints, bounded by a timeout.
type lineReader struct {
	t     *testing.T
	lines chan string
	seen  []string
}

func readLines(t *testing.T, cmd *exec.Cmd) *lineReader {
	t.Helper()
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	r := &lineReader{t: t, lines: make(chan string, 64)}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			r.lines <- sc.Text()
		}
		close(r.lines)
	}()
	return r
}

// next returns the next line, failing the test after timeout or at EOF.
func (r *lineReader) next(timeout time.Duration) string {
	r.t.Helper()
	select {
	case l, ok := <-r.lines:
		if !ok {
			r.t.Fatalf("output ended; lines so far:\n%s", strings.Join(r.seen, "\n"))
		}
		r.seen = append(r.seen, l)
		return l
	case <-time.After(timeout):
		r.t.Fatalf("no line within %v; lines so far:\n%s", timeout, strings.Join(r.seen, "\n"))
		return ""
	}
}

// udpPeer is a peer address on loopback.
func udpPeer(port int) *net.UDPAddr { return &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: port} }

// statusOutput runs `turnd status` with args and returns its output.
func statusOutput(t *testing.T, args ...string) string {
	t.Helper()
	code, stdout, stderr := runSplit(t, append([]string{"status"}, args...)...)
	if code != 0 {
		t.Fatalf("turnd status %v: exit %d\n%s", args, code, stderr)
	}
	return stdout
}

func wantAll(t *testing.T, what, got string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(got, w) {
			t.Errorf("%s lacks %q:\n%s", what, w, got)
		}
	}
}

// TestStatusAndDrainWait is the operator's view of a drain: `turnd status`
// while serving, a TCP client holding an allocation, `turnd drain --wait`
// sending SIGTERM and showing the allocation left and the deadline,
// `turnd status` while draining, and the exit reported (with a summary)
// once the client releases. The drain command writes to a pipe, so it
// prints a line per change rather than redrawing one.
func TestStatusAndDrainWait(t *testing.T) {
	cfg := testConfig()
	cfg.PIDFile = filepath.Join(t.TempDir(), "turnd.pid")
	srv := start(t, cfg)
	pid := strconv.Itoa(srv.cmd.Process.Pid)

	wantAll(t, "status while serving", statusOutput(t, "--http", srv.HTTP),
		"at "+srv.HTTP+": serving, accepting new allocations", "allocations:  0 (udp 0, tcp 0, tls 0)", "up:")

	client := testturn.Dial(t, "tcp", srv.TCP, "demo", "demo")
	peer := startPeer(t)
	client.MustAllocate()
	if code := client.Permit(udpPeer(peer)); code != 0 {
		t.Fatalf("permission: %d", code)
	}
	if !client.Echo(udpPeer(peer), "before the drain") {
		t.Fatal("no echo before the drain")
	}
	// (Traffic counters are tallied in batches, so "relayed:" is not
	// checked for exact numbers here.)
	wantAll(t, "status with a TCP allocation", statusOutput(t, "--http", srv.HTTP),
		"allocations:  1 (udp 0, tcp 1, tls 0)", "relayed:      to peers ")

	drain := exec.Command(turndBin, "drain", "--pidfile", cfg.PIDFile, "--http", srv.HTTP, "--wait")
	var drainErr bytes.Buffer
	drain.Stderr = &drainErr
	out := readLines(t, drain)
	if err := drain.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = drain.Process.Kill(); _ = drain.Wait() })

	if l := out.next(5 * time.Second); !strings.Contains(l, "sent SIGTERM to turnd (pid "+pid+")") {
		t.Fatalf("first line = %q", l)
	}
	srv.waitLog("drain started", 5*time.Second)
	// The first look may still see "serving" (the signal is handled
	// asynchronously); the next change is the drain.
	progress := out.next(5 * time.Second)
	if strings.HasPrefix(progress, "serving:") {
		progress = out.next(5 * time.Second)
	}
	if !regexp.MustCompile(`^draining: 1 allocation left \(udp 0, tcp 1, tls 0\), deadline in (1h0m0s|59m\d+s), last expires in (10m0s|9m\d+s) unless refreshed$`).MatchString(progress) {
		t.Errorf("progress line = %q", progress)
	}

	st := statusOutput(t, "--http", srv.HTTP)
	wantAll(t, "status while draining", st, "draining (SIGTERM) for", "refusing new allocations",
		"drain:        1 allocation left, deadline ")
	if !regexp.MustCompile(`\(in (1h0m0s|59m\d+s)\)`).MatchString(st) {
		t.Errorf("status while draining shows no countdown:\n%s", st)
	}
	var doc struct {
		State       string `json:"state"`
		Accepting   bool   `json:"accepting"`
		Allocations struct {
			Total int `json:"total"`
		} `json:"allocations"`
		Drain *struct {
			Deadline time.Time `json:"deadline"`
		} `json:"drain"`
	}
	if err := json.Unmarshal([]byte(statusOutput(t, "--http", srv.HTTP, "--json")), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.State != "draining" || doc.Accepting || doc.Allocations.Total != 1 || doc.Drain == nil ||
		!doc.Drain.Deadline.After(time.Now()) {
		t.Errorf("status --json while draining: %+v", doc)
	}
	if !client.Echo(udpPeer(peer), "during the drain") {
		t.Error("the live allocation stopped relaying during the drain")
	}
	if srv.exited() {
		t.Fatal("turnd exited while the client still held its allocation")
	}

	client.Close() // over TCP, closing the connection ends the allocation
	if code := srv.waitExit(5 * time.Second); code != 0 {
		t.Fatalf("turnd exit code %d", code)
	}
	summary := out.next(5 * time.Second)
	wantAll(t, "summary", summary, "turnd (pid "+pid+") exited ", "after the drain started: 1 allocation drained")
	done := make(chan error, 1)
	go func() { done <- drain.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("turnd drain: %v\n%s", err, drainErr.String())
		}
	case <-time.After(5 * time.Second):
		t.Fatal("turnd drain --wait did not exit after turnd did")
	}
	for _, l := range out.seen {
		if strings.ContainsAny(l, "\r\033") {
			t.Errorf("terminal control characters in piped output: %q", l)
		}
	}
}

// TestDrainByConfigWithoutWait: the config names the pidfile; its HTTP
// port (0, chosen at start) cannot be read back from the file, so the
// signal goes out without a look at /status, and an idle turnd exits at once.
func TestDrainByConfigWithoutWait(t *testing.T) {
	cfg := testConfig()
	cfg.PIDFile = filepath.Join(t.TempDir(), "turnd.pid")
	path := writeConfig(t, cfg)
	srv := startTurndFile(t, path)
	code, stdout, stderr := runSplit(t, "drain", "--config", path)
	if code != 0 || !strings.Contains(stdout, "sent SIGTERM") {
		t.Fatalf("exit %d\n%s%s", code, stdout, stderr)
	}
	if code := srv.waitExit(5 * time.Second); code != 0 {
		t.Fatalf("turnd exit code %d", code)
	}
	if line := srv.waitLog("drain complete", time.Second); line["reason"] != "drained" {
		t.Fatalf("drain complete: %v", line)
	}
}

// TestDrainRefusesOtherProcesses: a PID that is not turnd's (a stale
// pidfile) gets no signal; and without a PID there is nothing to do.
func TestDrainRefusesOtherProcesses(t *testing.T) {
	sleep := exec.Command("sleep", "30")
	if err := sleep.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sleep.Process.Kill(); _ = sleep.Wait() })
	code, _, stderr := runSplit(t, "drain", "--pid", strconv.Itoa(sleep.Process.Pid))
	if code != 1 || !strings.Contains(stderr, "is not turnd") {
		t.Fatalf("exit %d, stderr %q; want 1 and a refusal", code, stderr)
	}
	if err := sleep.Process.Signal(syscall.Signal(0)); err != nil {
		t.Fatalf("the other process was signalled: %v", err)
	}
	if code, _, stderr := runSplit(t, "drain"); code != 2 || !strings.Contains(stderr, "--pid, --pidfile or --config") {
		t.Fatalf("drain without a PID: exit %d, %q", code, stderr)
	}
	if code, _, stderr := runSplit(t, "status", "--http", "127.0.0.1:1"); code != 1 || !strings.Contains(stderr, "/status") {
		t.Fatalf("status of nothing: exit %d, %q", code, stderr)
	}
}

// TestStatusShowsExpiry: /status knows when each allocation ends unless it
// is refreshed, from the lifetime granted by Allocate and Refresh, and a
// drain shows by when it ends at the latest: a user waiting on a drain
// sees what it waits for.
func TestStatusShowsExpiry(t *testing.T) {
	srv := start(t, testConfig())
	client := testturn.Dial(t, "udp", srv.UDP, "demo", "demo")
	// Lifetimes between RFC 8656's default (10 minutes) and the cap (1 hour)
	// are granted as asked.
	if code := testturn.ErrorCode(client.Allocate(testturn.Lifetime(20 * time.Minute))); code != 0 {
		t.Fatalf("allocate: %d", code)
	}
	type doc struct {
		Allocations struct {
			Total      int        `json:"total"`
			Oldest     *time.Time `json:"oldest_created_at"`
			NextExpiry *time.Time `json:"next_expiry"`
			LastExpiry *time.Time `json:"last_expiry"`
		} `json:"allocations"`
		Drain *struct {
			AllocationsLeft int       `json:"allocations_left"`
			EndsBy          time.Time `json:"ends_by"`
		} `json:"drain"`
	}
	status := func() doc {
		var d doc
		if err := json.Unmarshal([]byte(statusOutput(t, "--http", srv.HTTP, "--json")), &d); err != nil {
			t.Fatal(err)
		}
		return d
	}
	near := func(what string, got *time.Time, want time.Duration) {
		t.Helper()
		if got == nil {
			t.Fatalf("%s missing", what)
		}
		if d := time.Until(*got); d > want || d < want-10*time.Second {
			t.Errorf("%s in %v, want about %v", what, d, want)
		}
	}
	d := status()
	near("last_expiry after Allocate", d.Allocations.LastExpiry, 20*time.Minute)
	if d.Allocations.Oldest == nil || time.Since(*d.Allocations.Oldest) > 10*time.Second {
		t.Errorf("oldest_created_at %v, want just now", d.Allocations.Oldest)
	}
	if code := client.Refresh(30 * time.Minute); code != 0 {
		t.Fatalf("refresh: %d", code)
	}
	d = status()
	near("last_expiry after Refresh", d.Allocations.LastExpiry, 30*time.Minute)
	near("next_expiry after Refresh", d.Allocations.NextExpiry, 30*time.Minute)

	srv.signal(syscall.SIGTERM)
	srv.waitLog("drain started", 5*time.Second)
	d = status()
	if d.Drain == nil || d.Drain.AllocationsLeft != 1 {
		t.Fatalf("drain %+v, want 1 allocation left", d.Drain)
	}
	near("drain.ends_by", &d.Drain.EndsBy, 30*time.Minute)
	wantAll(t, "status while draining", statusOutput(t, "--http", srv.HTTP), "unless an allocation is refreshed",
		"oldest made ", "last in ")
	if code := client.Refresh(0); code != 0 {
		t.Fatalf("refresh 0: %d", code)
	}
	if code := srv.waitExit(5 * time.Second); code != 0 {
		t.Fatalf("turnd exit code %d", code)
	}
}
