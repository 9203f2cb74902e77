package deploytest

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// repoRoot is the turnd checkout; tests run in deploy/test.
const repoRoot = "../.."

var chartDir = filepath.Join(repoRoot, "deploy", "helm", "turnd")

// tool finds an executable: $envVar, then bin/tools/NAME (where
// scripts/install-test-tools.sh puts Helm), then $PATH. A missing tool fails
// the test rather than skipping it, so CI cannot pass without running it.
func tool(t *testing.T, envVar, name string) string {
	t.Helper()
	if p := os.Getenv(envVar); p != "" {
		return p
	}
	if p, err := filepath.Abs(filepath.Join(repoRoot, "bin", "tools", name)); err == nil {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	p, err := exec.LookPath(name)
	if err != nil {
		t.Fatalf("%s not found (set $%s, or run scripts/install-test-tools.sh): %v", name, envVar, err)
	}
	return p
}

// run executes a command and returns stdout, stderr and its error; a non-zero
// exit is an *exec.ExitError, a missing binary another error.
func run(env []string, name string, args ...string) (string, string, error) {
	cmd := exec.Command(name, args...)
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	return stdout.String(), stderr.String(), err
}

// exitedNonZero reports whether err is a command's non-zero exit (as opposed
// to a failure to start it).
func exitedNonZero(err error) bool {
	var exit *exec.ExitError
	return errors.As(err, &exit)
}
