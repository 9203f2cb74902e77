package rlimit

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// RaiseOpenFiles sets the soft RLIMIT_NOFILE to the hard limit and returns
// the limits in force afterwards. Go (since 1.19) already raises the soft
// limit at start-up, but only to hard-1; turnd does it explicitly so the
// limit it runs with is the one it logs.
//
// When the soft limit already equals the hard one nothing is changed: that
// is the case under systemd's LimitNOFILE=, whose unit also refuses
// setrlimit through its system call filter. If raising fails, the error is
// returned along with the unchanged limits, which remain usable.
func RaiseOpenFiles() (soft, hard uint64, err error) {
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		return 0, 0, fmt.Errorf("get open-file limit: %w", err)
	}
	if lim.Cur >= lim.Max {
		return lim.Cur, lim.Max, nil
	}
	raised := unix.Rlimit{Cur: lim.Max, Max: lim.Max}
	if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &raised); err != nil {
		return lim.Cur, lim.Max, fmt.Errorf("raise open-file limit from %d to %d: %w", lim.Cur, lim.Max, err)
	}
	return raised.Cur, raised.Max, nil
}

// OpenFiles returns how many file descriptors the process has open, not
// counting the one used to list them.
func OpenFiles() (int, error) {
	d, err := os.Open("/proc/self/fd")
	if err != nil {
		return 0, fmt.Errorf("%w: %w", ErrNoFDTable, err)
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return 0, fmt.Errorf("%w: %w", ErrNoFDTable, err)
	}
	return len(names) - 1, nil
}
