package e2e

import (
	"syscall"
	"time"
)

// killedBy returns the signal that ended turnd, or 0 if it exited by itself.
func (p *turnd) killedBy(timeout time.Duration) syscall.Signal {
	p.t.Helper()
	p.waitExit(timeout)
	if ws, ok := p.cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return ws.Signal()
	}
	return 0
}
