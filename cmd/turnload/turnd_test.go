package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// turndConfig is a loopback turnd: UDP only, on a port the kernel picks,
// loopback peers allowed (the echo is on 127.0.0.1), no HTTP listener.
const turndConfig = `realm: turnd.local
listen:
  udp: ["127.0.0.1:0"]
  tcp: []
relay:
  address: 127.0.0.1
auth:
  users:
    demo: demo
peers:
  allow_loopback: true
http:
  address: ""
log:
  format: json
`

// startTurnd builds turnd, starts it and returns its UDP address and PID;
// it is stopped (SIGQUIT: no drain) when the test ends.
func startTurnd(t *testing.T) (addr string, pid int) {
	t.Helper()
	dir := t.TempDir()
	bin := filepath.Join(dir, "turnd")
	build := exec.Command("go", "build", "-o", bin, "../turnd")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build turnd: %v\n%s", err, out)
	}
	cfg := filepath.Join(dir, "turnd.yaml")
	if err := os.WriteFile(cfg, []byte(turndConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--config", cfg)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // a Ctrl-C on the test must not start a drain
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	serving := make(chan string, 1)
	var logBuf bytes.Buffer
	go func() {
		defer close(exited)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			logBuf.WriteString(sc.Text() + "\n")
			var line struct {
				Msg string   `json:"msg"`
				UDP []string `json:"udp"`
			}
			if json.Unmarshal(sc.Bytes(), &line) == nil && strings.Contains(line.Msg, "turnd serving") && len(line.UDP) > 0 {
				serving <- line.UDP[0]
			}
		}
		_ = cmd.Wait()
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGQUIT)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
	})
	select {
	case addr = <-serving:
		return addr, cmd.Process.Pid
	case <-exited:
		t.Fatalf("turnd exited before serving:\n%s", logBuf.String())
	case <-time.After(20 * time.Second):
		t.Fatal("turnd did not log \"turnd serving\" within 20s")
	}
	return "", 0
}

// runJSON runs turnload in-process with --json and decodes its report.
func runJSON(t *testing.T, args ...string) report {
	t.Helper()
	var out, errb bytes.Buffer
	if code := run(append(args, "--json"), &out, &errb); code != 0 {
		t.Fatalf("turnload %v: exit %d\n%s", args, code, errb.String())
	}
	var rep report
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("decode report: %v\n%s", err, out.String())
	}
	return rep
}

// TestAgainstTurnd runs every mode briefly against a real turnd.
func TestAgainstTurnd(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs turnd")
	}
	addr, pid := startTurnd(t)
	spid := strconv.Itoa(pid)

	for _, framing := range []string{"channel", "send-indication"} {
		t.Run("relay "+framing, func(t *testing.T) {
			args := []string{"relay", "--server", addr, "--clients", "4", "--rate", "200", "--duration", "2s", "--server-pid", spid}
			if framing == "send-indication" {
				args = append(args, "--send-indications")
			}
			rep := runJSON(t, args...)
			r := rep.Relay
			if rep.Setup.OK != 4 || r == nil || r.Framing != framing {
				t.Fatalf("report %+v", rep)
			}
			// 4 clients × 200/s × 2 s offer 400; the pacer's burst caps the
			// catch-up after a stall, so a starved load generator sends
			// fewer by design. Every message sent must come back.
			if r.Sent < 300 || r.Sent > 400 || r.Received != r.Sent || r.LossPct != 0 || r.EchoIn != r.Sent {
				t.Errorf("sent %d, echoed %d, received %d, loss %.2f%%: want 300-400 sent, each echoed and received, no loss", r.Sent, r.EchoIn, r.Received, r.LossPct)
			}
			if r.Misrouted+r.Other+r.SendFailed != 0 || r.RTTMaxMs <= 0 || r.RTTP99Ms > r.RTTMaxMs {
				t.Errorf("relay %+v", r)
			}
			if rep.Process == nil || rep.Process.PID != pid || rep.Process.RSSKB <= 0 {
				t.Errorf("server process %+v", rep.Process)
			}
		})
	}
	t.Run("alloc", func(t *testing.T) {
		rep := runJSON(t, "alloc", "--server", addr, "--clients", "20", "--concurrency", "5")
		if rep.Setup.OK != 20 || rep.Setup.Failed != 0 || rep.Alloc == nil || rep.Alloc.ReleaseFailed != 0 || rep.Alloc.PerSecond <= 0 {
			t.Errorf("report %+v alloc %+v", rep, rep.Alloc)
		}
	})
	t.Run("idle", func(t *testing.T) {
		rep := runJSON(t, "idle", "--server", addr, "--clients", "10", "--duration", "300ms", "--refresh", "100ms", "--server-pid", spid)
		x := rep.Idle
		if rep.Setup.OK != 10 || x == nil || x.Held != 10 || x.Refreshes < 1 || x.RefreshFailed != 0 || x.ReleasedFailed != 0 || x.HeldRSSKB <= 0 {
			t.Errorf("report %+v idle %+v", rep, x)
		}
	})
	t.Run("bad password", func(t *testing.T) {
		var out, errb bytes.Buffer
		code := run([]string{"alloc", "--server", addr, "--clients", "1", "--pass", "wrong", "--json"}, &out, &errb)
		if code != 1 || !strings.Contains(out.String(), "401") {
			t.Errorf("exit %d, report %s, stderr %s", code, out.String(), errb.String())
		}
	})
}

// TestNoServer checks that a run against a closed port fails fast and
// says why, instead of hanging.
func TestNoServer(t *testing.T) {
	var out, errb bytes.Buffer
	code := run([]string{"relay", "--server", "127.0.0.1:9", "--clients", "2", "--timeout", "1s"}, &out, &errb)
	if code != 1 || !strings.Contains(errb.String(), errNoClients.Error()) {
		t.Errorf("exit %d, stderr %q", code, errb.String())
	}
}
