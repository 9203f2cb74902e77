//go:build !pprof

package main

import "log/slog"

// startProfiler does nothing in a normal build; see pprof.go.
func startProfiler(*slog.Logger) {}
