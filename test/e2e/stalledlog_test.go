package e2e

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/turnd/turnd/internal/testturn"
)

// TestStalledLogReaderKeepsServing: turnd's stderr is a pipe whose reader
// is alive but stops reading (a stuck log shipper). A plain write would
// block once the pipe is full, and with it every request that logs; turnd
// queues log lines and drops what does not fit, so allocations and relaying
// go on. Once the reader drains the pipe, turnd says how many lines it
// dropped, and it still writes its last lines on exit.
func TestStalledLogReaderKeepsServing(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	p := &turnd{t: t, done: make(chan struct{}), added: make(chan struct{})}
	cfg := testConfig()                // debug level: many lines per request
	cfg.Limits.UnauthenticatedRate = 0 // thousands of allocations from one address, quickly
	cfg.Limits.UserAllocateRate = 0    // and one user
	p.cmd = exec.Command(turndBin, "--config", writeConfig(t, cfg))
	p.cmd.Stderr = w
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	go func() { p.err = p.cmd.Wait(); close(p.done) }()
	t.Cleanup(p.kill)
	log := bufio.NewReader(r)
	for p.UDP == "" {
		line, err := log.ReadBytes('\n')
		if err != nil {
			t.Fatalf("turnd log ended before it served: %v", err)
		}
		var m map[string]any
		if json.Unmarshal(line, &m) == nil && m["msg"] == "turnd serving" {
			p.UDP, p.HTTP = first(m["udp"]), m["http"].(string)
		}
	}

	// Nobody reads stderr from here on. Client-caused lines are limited per
	// kind, so the queue fills with the two usage records of each cycle:
	// cycles go on until lines are dropped, at most 4000 (8000 records,
	// twice what the queue and the pipe hold).
	peer := echoPeer(t)
	dropped := 0.0
	for i := 0; i < 4000 && dropped == 0; i++ {
		c := testturn.Dial(t, "udp", p.UDP, "demo", "demo")
		relayed(t, c, peer)
		if code := c.Refresh(0); code != 0 {
			t.Fatalf("cycle %d: release: error %d", i, code)
		}
		c.Close()
		if i%100 == 99 {
			dropped = p.metric("turnd_log_lines_dropped_total")
		}
	}
	if dropped == 0 {
		t.Fatal("no log line was dropped: the pipe never filled, the test tests nothing")
	}

	// The reader comes back: once the queue has drained turnd reports the
	// drops; asked to stop, it writes its last lines and exits 0.
	lines := make(chan string, 64)
	go func() {
		defer close(lines)
		for {
			line, err := log.ReadString('\n')
			if err != nil {
				return
			}
			lines <- line
		}
	}()
	waitLine := func(substr string) {
		t.Helper()
		timeout := time.After(10 * time.Second)
		for {
			select {
			case line, ok := <-lines:
				if !ok {
					t.Fatalf("turnd's log ended without %q (%.0f lines dropped)", substr, dropped)
				}
				if strings.Contains(line, substr) {
					return
				}
			case <-timeout:
				t.Fatalf("no %q line within 10s of stderr being read again", substr)
			}
		}
	}
	waitLine("log lines dropped")
	p.signal(syscall.SIGQUIT)
	waitLine("drain complete")
	if code := p.waitExit(10 * time.Second); code != 0 {
		t.Fatalf("exit code %d", code)
	}
	t.Logf("%.0f log lines dropped while stderr was not read", dropped)
}
