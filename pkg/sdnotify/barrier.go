package sdnotify

import (
	"errors"
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// sendWithFd sends state and a descriptor to the socket at name.
func sendWithFd(name, state string, fd int) error {
	s, err := unix.Socket(unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(s)
	return unix.Sendmsg(s, []byte(state), unix.UnixRights(fd), &unix.SockaddrUnix{Name: name}, 0)
}

// ErrBarrierTimeout means systemd did not confirm a Barrier in time.
var ErrBarrierTimeout = errors.New("systemd did not answer the barrier in time")

// Barrier waits until systemd has read every notification sent before it
// (BARRIER=1, as sd_notify_barrier(3)): a process that hands its unit to
// a successor (MAINPID=) must not exit before systemd knows, or systemd
// takes the service for dead. It sends one end of a pipe and waits, at
// most timeout, for systemd to close it.
func (n *Notifier) Barrier(timeout time.Duration) error {
	if n == nil {
		return nil
	}
	r, w, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("notify systemd: barrier: %w", err)
	}
	defer r.Close()
	err = sendWithFd(n.addr.Name, "BARRIER=1", int(w.Fd()))
	_ = w.Close() // systemd holds the only other copy
	if err != nil {
		return fmt.Errorf("notify systemd: barrier: %w", err)
	}
	if err := r.SetReadDeadline(time.Now().Add(timeout)); err != nil {
		return fmt.Errorf("notify systemd: barrier: %w", err)
	}
	var b [1]byte
	if _, err := r.Read(b[:]); errors.Is(err, os.ErrDeadlineExceeded) {
		return fmt.Errorf("notify systemd: %w", ErrBarrierTimeout)
	}
	return nil // EOF: systemd closed its copy
}
