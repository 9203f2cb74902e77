package main

import (
	"slices"
	"testing"

	"github.com/turnd/turnd/pkg/config"
)

// The configuration the runner writes must be one turnd accepts, with the
// limit it was asked for, and coturn must get the same limit in its unit.
func TestServersGetTheSameLimit(t *testing.T) {
	for _, maxBPS := range []int64{0, 80_000_000} {
		dir := t.TempDir()
		o := serverOpts{cpus: 2, maxBPS: maxBPS}
		argv, err := turndArgv("turnd", 3478, dir, o)
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := config.Load(argv[len(argv)-1])
		if err != nil {
			t.Fatalf("max-bps %d: turnd refuses the bench config: %v", maxBPS, err)
		}
		if cfg.Limits.MaxBPS != maxBPS {
			t.Errorf("turnd max_bps = %d, want %d", cfg.Limits.MaxBPS, maxBPS)
		}
		cargv, err := coturnArgv("turnserver", 3478, dir, o)
		if err != nil {
			t.Fatal(err)
		}
		hasLimit := slices.Contains(cargv, "--max-bps=10000000")
		if hasLimit != (maxBPS > 0) {
			t.Errorf("max-bps %d: coturn argv %v", maxBPS, cargv)
		}
	}
}
