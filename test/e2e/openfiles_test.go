package e2e

import (
	"os/exec"
	"testing"
	"time"
)

// TestOpenFileLimitRaised starts turnd with a soft open-file limit of 1024
// under a hard limit of 4096 and checks that it serves with 4096 and says
// how many allocations that holds. Go raises the soft limit by itself only
// to hard-1 (4095), so 4096 shows turnd's own raise at work.
func TestOpenFileLimitRaised(t *testing.T) {
	if _, err := exec.LookPath("prlimit"); err != nil {
		t.Fatal("prlimit not found: install util-linux")
	}
	srv, _ := launch(t, writeConfig(t, testConfig()), launchOptions{wrapper: []string{"prlimit", "--nofile=1024:4096"}})
	line := srv.waitLog("open-file limit", time.Second)
	if line["limit"] != float64(4096) {
		t.Fatalf("limit = %v, want 4096: %v", line["limit"], line)
	}
	open, _ := line["in_use"].(float64)
	if open < 3 || line["udp_allocations"] != 4096-open {
		t.Fatalf("in_use = %v, udp_allocations = %v, want 4096 - in_use: %v", open, line["udp_allocations"], line)
	}
	// The test config's relay range (61000-65535, 4536 ports) is larger
	// than what 4096 descriptors hold: turnd must say so.
	if line["level"] != "WARN" {
		t.Errorf("limit below the relay port range logged at %v, want WARN", line["level"])
	}
	if got := srv.metric("process_max_fds"); got != 4096 {
		t.Errorf("process_max_fds = %v, want 4096", got)
	}
}
