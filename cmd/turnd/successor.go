package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"time"

	"github.com/turnd/turnd/internal/handover"
	"github.com/turnd/turnd/pkg/drain"
)

// exclusive runs f unless another hand-over runs, one is done, or turnd
// drains: then it says why, before any successor is started.
func (h *handoverd) exclusive(f func() error) error {
	if !h.busy.TryLock() {
		return errors.New("another hand-over is in progress")
	}
	defer h.busy.Unlock()
	if h.handedOver.Load() {
		return errors.New("this turnd has handed over already")
	}
	if st := h.d.machine.Status(); st.Phase != drain.Serving {
		return fmt.Errorf("turnd is %s", st.Phase)
	}
	return f()
}

// successor is a successor process this one started, reaped whatever
// happens.
type successor struct {
	cmd    *exec.Cmd
	exited chan struct{} // closed once reaped; err is set then
	err    error
}

func (c *successor) gone() bool {
	select {
	case <-c.exited:
		return true
	default:
		return false
	}
}

// why says how the successor ended if it has (it closed its end: it is
// exiting, so a moment is enough), else err.
func (c *successor) why(err error) error {
	t := time.NewTimer(100 * time.Millisecond)
	defer t.Stop()
	select {
	case <-c.exited:
	case <-t.C:
		return err
	}
	if c.err == nil {
		return fmt.Errorf("it exited: %w", err)
	}
	return fmt.Errorf("it ended (%s): %w", c.err.Error(), err)
}

// reaped waits, at most d, for the successor to be reaped.
func (c *successor) reaped(d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-c.exited:
	case <-t.C:
	}
}

// upgrade starts the successor with one end of a socket pair and hands
// over to it; a successor that fails is killed.
func (h *handoverd) upgrade() (int, error) {
	if os.Getpid() == 1 {
		// The successor would die with the namespace when this process exits.
		return 0, errors.New("turnd is PID 1 of its PID namespace: start the successor beside it with serve --take-over")
	}
	var pid int
	err := h.exclusive(func() error {
		var err error
		pid, err = h.startSuccessor()
		return err
	})
	return pid, err
}

// startSuccessor is upgrade's work, under exclusive.
func (h *handoverd) startSuccessor() (int, error) {
	parent, child, err := handover.Pair()
	if err != nil {
		return 0, err
	}
	defer parent.Close()
	cmd := exec.Command(h.exe, h.args...)
	cmd.ExtraFiles = []*os.File{child} // descriptor 3
	cmd.Env = append(os.Environ(), handover.EnvFD+"=3")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = nil, os.Stdout, os.Stderr
	err = cmd.Start()
	_ = child.Close()
	if err != nil {
		return 0, fmt.Errorf("start successor %s: %w", h.exe, err)
	}
	c := &successor{cmd: cmd, exited: make(chan struct{})}
	go func() {
		c.err = cmd.Wait()
		close(c.exited)
	}()
	ctx, cancel := context.WithTimeout(context.Background(), h.d.cfg.Handover.Timeout)
	defer cancel()
	err = func() error {
		req, err := parent.ReadRequest(ctx)
		switch {
		case err != nil:
			return c.why(err)
		case req.Kind != handover.KindTakeOver:
			return errors.New("it sent an upgrade request")
		}
		return h.handOver(ctx, parent, req, c)
	}()
	if err != nil {
		_ = cmd.Process.Kill()
		c.reaped(5 * time.Second) // bounded: one stuck in the kernel must not hold the lock forever
		return 0, fmt.Errorf("successor pid %d: %w", cmd.Process.Pid, err)
	}
	return cmd.Process.Pid, nil
}
