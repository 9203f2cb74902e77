//go:build pprof

package main

import (
	"log/slog"
	"net/http"
	_ "net/http/pprof" // profiling endpoints, only in builds with -tags pprof
	"os"
)

// startProfiler serves net/http/pprof on $TURND_PPROF (default
// 127.0.0.1:6060) in a profiling build (go build -tags pprof). It is for
// measuring the relay path, never for production binaries.
func startProfiler(log *slog.Logger) {
	addr := os.Getenv("TURND_PPROF")
	if addr == "" {
		addr = "127.0.0.1:6060"
	}
	log.Warn("profiling build: pprof endpoints are served", "address", addr)
	go func() { _ = http.ListenAndServe(addr, nil) }()
}
