package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// stopWait bounds how long a stopped process may take to exit before it
// is killed.
const stopWait = 5 * time.Second

// process is a child started in its own process group (so a Ctrl-C on the
// runner reaches only the runner, which then stops it by PID).
type process struct {
	name string
	cmd  *exec.Cmd
	done chan struct{}
}

// start runs argv with stdout and stderr appended to logPath.
func start(name, logPath string, argv ...string) (*process, error) {
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open %s log: %w", name, err)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		_ = logf.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &process{name: name, cmd: cmd, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		_ = logf.Close()
		close(p.done)
	}()
	return p, nil
}

func (p *process) pid() int { return p.cmd.Process.Pid }

// exited reports whether the process has ended.
func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stop sends sig to the process (by PID), waits up to stopWait, then
// kills it.
func (p *process) stop(sig syscall.Signal) {
	if p.exited() {
		return
	}
	_ = p.cmd.Process.Signal(sig)
	select {
	case <-p.done:
	case <-time.After(stopWait):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// runTool runs a measuring tool to completion (bounded by ctx and
// timeout), feeding its stdout to consume line by line as it arrives; its
// stderr goes to errw. It returns the tool's own CPU time.
func runTool(ctx context.Context, timeout time.Duration, errw io.Writer, consume func(io.Reader), argv ...string) (time.Duration, error) {
	return runToolStarted(ctx, timeout, errw, nil, consume, argv...)
}

// runToolStarted is runTool that tells started the tool's PID once it runs
// (before consume), so its CPU can be read while it works.
func runToolStarted(ctx context.Context, timeout time.Duration, errw io.Writer, started func(pid int), consume func(io.Reader), argv ...string) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Stderr = errw
	// CommandContext kills by PID on cancel; Interrupt first lets turnload
	// release its allocations.
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = stopWait
	out, err := cmd.StdoutPipe()
	if err != nil {
		return 0, fmt.Errorf("pipe %s: %w", argv[0], err)
	}
	if err := cmd.Start(); err != nil {
		return 0, fmt.Errorf("start %s: %w", argv[0], err)
	}
	if started != nil {
		started(cmd.Process.Pid)
	}
	consume(out)
	_, _ = io.Copy(io.Discard, out) // let it finish writing
	err = cmd.Wait()
	var cpu time.Duration
	if cmd.ProcessState != nil {
		cpu = cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	}
	if err != nil {
		return cpu, fmt.Errorf("run %s: %w", argv[0], err)
	}
	return cpu, nil
}
