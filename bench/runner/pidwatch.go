package main

import (
	"errors"
	"fmt"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// pidWatch follows a process that need not be the runner's child (a turnd
// started by its predecessor's upgrade) through a pidfd, so a signal never
// reaches a process that reused its PID.
type pidWatch struct {
	pid  int
	fd   int
	gone chan struct{} // closed once the process has exited
	// goneAt is when the exit was seen; valid once gone is closed.
	goneAt time.Time
}

func watchPID(pid int) (*pidWatch, error) {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return nil, fmt.Errorf("watch pid %d: %w", pid, err)
	}
	w := &pidWatch{pid: pid, fd: fd, gone: make(chan struct{})}
	go func() {
		defer close(w.gone)
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		for {
			// A pidfd turns readable when its process exits.
			if _, err := unix.Poll(fds, -1); !errors.Is(err, unix.EINTR) {
				w.goneAt = time.Now()
				return
			}
		}
	}()
	return w, nil
}

// wait reports whether the process exited within timeout.
func (w *pidWatch) wait(timeout time.Duration) bool {
	select {
	case <-w.gone:
		return true
	case <-time.After(timeout):
		return false
	}
}

// stop sends sig, waits up to stopWait, then kills the process, and
// closes the pidfd once it is gone.
func (w *pidWatch) stop(sig syscall.Signal) {
	if !w.wait(0) {
		_ = unix.PidfdSendSignal(w.fd, sig, nil, 0)
		if !w.wait(stopWait) {
			_ = unix.PidfdSendSignal(w.fd, unix.SIGKILL, nil, 0)
			if !w.wait(stopWait) {
				return // leave the descriptor to the poller
			}
		}
	}
	_ = unix.Close(w.fd)
}
