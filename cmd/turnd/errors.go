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

	// errNoTokenFile, errAdminOff and errTokenWrong say why `turnd admin`
	// could not reach a running turnd's admin endpoints.
	errNoTokenFile = errors.New("no admin token file: pass --token-file, or --config with http.admin_token_file")
	errAdminOff    = errors.New("turnd serves no admin endpoints: set http.admin_token_file and restart it")
	errTokenWrong  = errors.New("turnd refused the admin token (401)")
)
