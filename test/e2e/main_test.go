// Package e2e runs the real turnd binary against real clients: coturn's
// turnutils_uclient and turnutils_peer, and a small TURN client of its own
// for the cases that need to see exact error codes. Everything listens on
// loopback on ports the kernel picks.
package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// turndBin is the binary under test, built once by TestMain.
var turndBin string

func TestMain(m *testing.M) {
	if os.Getenv(fakeSuccessorEnv) != "" {
		os.Exit(fakeSuccessor())
	}
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	for _, tool := range []string{"turnutils_uclient", "turnutils_peer"} {
		if _, err := exec.LookPath(tool); err != nil {
			fmt.Fprintf(os.Stderr, "e2e: %s not found: install Debian's coturn package (scripts/install-test-tools.sh)\n", tool)
			return 1
		}
	}
	dir, err := os.MkdirTemp("", "turnd-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	turndBin = filepath.Join(dir, "turnd")
	build := exec.Command("go", "build", "-o", turndBin, "../../cmd/turnd")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "e2e: build turnd:", err)
		return 1
	}
	return m.Run()
}
