package e2e

import (
	"io"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// startWrapped runs turnd on the config file at path behind wrapper (for
// example prlimit; nothing for turnd itself), waits for "turnd serving" and
// returns the process with the read end of its stderr pipe, which a test
// may close to make turnd's log unwritable. The wrapper must exec turnd, so
// that the PID the test signals is turnd's.
func startWrapped(t *testing.T, path string, wrapper ...string) (*turnd, io.Closer) {
	t.Helper()
	argv := append(append([]string{}, wrapper...), turndBin, "--config", path)
	p := &turnd{t: t, cfg: path, done: make(chan struct{}), added: make(chan struct{})}
	p.cmd = exec.Command(argv[0], argv[1:]...)
	stderr, err := p.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go p.collect(stderr)
	t.Cleanup(p.kill)
	line := p.waitLog("turnd serving", 10*time.Second)
	p.UDP, p.TCP, p.TLS = first(line["udp"]), first(line["tcp"]), first(line["tls"])
	p.HTTP, _ = line["http"].(string)
	return p, stderr
}

// killedBy returns the signal that ended turnd, or 0 if it exited by itself.
func (p *turnd) killedBy(timeout time.Duration) syscall.Signal {
	p.t.Helper()
	p.waitExit(timeout)
	if ws, ok := p.cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return ws.Signal()
	}
	return 0
}
