package rlimit

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// setSoft lowers this test process's soft open-file limit and restores the
// original limits when the test ends.
func setSoft(t *testing.T, soft uint64) unix.Rlimit {
	t.Helper()
	var orig unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &orig); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &orig); err != nil {
			t.Errorf("restore limit: %v", err)
		}
	})
	lim := unix.Rlimit{Cur: min(soft, orig.Max), Max: orig.Max}
	if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	return orig
}

func TestRaiseOpenFiles(t *testing.T) {
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	if lim.Max < 2 {
		t.Skipf("hard limit %d leaves nothing to raise", lim.Max)
	}
	cases := []struct {
		name string
		soft uint64 // soft limit before the call
	}{
		{"below hard", lim.Max / 2},
		{"Go's own hard-1", lim.Max - 1},
		{"already at hard", lim.Max},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			orig := setSoft(t, tc.soft)
			soft, hard, err := RaiseOpenFiles()
			if err != nil {
				t.Fatal(err)
			}
			if soft != orig.Max || hard != orig.Max {
				t.Fatalf("got soft=%d hard=%d, want both %d", soft, hard, orig.Max)
			}
			var now unix.Rlimit
			if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &now); err != nil {
				t.Fatal(err)
			}
			if now.Cur != soft {
				t.Fatalf("limit in force is %d, RaiseOpenFiles said %d", now.Cur, soft)
			}
		})
	}
}

func TestOpenFilesCountsDescriptors(t *testing.T) {
	before, err := OpenFiles()
	if err != nil {
		t.Fatal(err)
	}
	const n = 3
	for i := 0; i < n; i++ {
		f, err := os.Create(filepath.Join(t.TempDir(), "f"))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
	}
	after, err := OpenFiles()
	if err != nil {
		t.Fatal(err)
	}
	// Other goroutines of the test binary may open files too, but never
	// close ours: at least n more.
	if after-before < n {
		t.Fatalf("open files %d → %d after opening %d", before, after, n)
	}
}
