package main

import "errors"

var (
	// errNotTurnd means the process a PID names is not turnd: a stale
	// pidfile whose number was reused must not get a SIGTERM.
	errNotTurnd = errors.New("process is not turnd")
	// errStillRunning means turnd outlived its drain deadline by more than
	// the margin `turnd drain --wait` allows.
	errStillRunning = errors.New("turnd is still running after its drain deadline")
	// errNoHTTP means the config turns turnd's HTTP listener off, so there
	// is no /status to read.
	errNoHTTP = errors.New("http.address is empty: turnd serves no /status")
)
