package main

import (
	"errors"
	"fmt"
	"os/exec"
	"time"

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
