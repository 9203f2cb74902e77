package main

import (
	"os/signal"
	"syscall"
)

// ignoreSIGPIPE keeps turnd relaying when its log stops being writable. The
// Go runtime kills a program with SIGPIPE when a write to stdout or stderr
// hits a closed pipe (a log collector that died, a `turnd | head`); ignored,
// the write just fails with EPIPE and slog drops the line. Relaying live
// calls matters more than a log line nobody can read.
func ignoreSIGPIPE() { signal.Ignore(syscall.SIGPIPE) }
