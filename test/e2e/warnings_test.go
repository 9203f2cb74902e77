package e2e

import (
	"encoding/json"
	"os"
	"strconv"
	"strings"
	"testing"
)

// TestEphemeralRangeWarning: relay ports inside the kernel's ephemeral
// range are logged as a warning at start and listed in /status; the test
// config's range above it is not. What is expected follows this host's
// range, read the way turnd reads it.
func TestEphemeralRangeWarning(t *testing.T) {
	data, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(data))
	for _, tt := range []struct {
		min, max int
	}{{49152, 65535}, {61000, 65535}} {
		cfg := testConfig()
		cfg.Relay.MinPort, cfg.Relay.MaxPort = tt.min, tt.max
		srv := start(t, cfg)
		var doc struct {
			Warnings []string `json:"warnings"`
		}
		if err := json.Unmarshal([]byte(statusOutput(t, "--http", srv.HTTP, "--json")), &doc); err != nil {
			t.Fatal(err)
		}
		lo, hi := atoi(t, f[0]), atoi(t, f[1])
		overlaps := tt.max >= lo && tt.min <= hi
		switch {
		case overlaps && (len(doc.Warnings) != 1 || !strings.Contains(doc.Warnings[0], "overlap the kernel's ephemeral port range "+f[0]+"-"+f[1])):
			t.Errorf("relay %d-%d: /status warnings %q, want the ephemeral range named", tt.min, tt.max, doc.Warnings)
		case overlaps && !srv.hasLog("overlap the kernel's ephemeral port range"):
			t.Errorf("relay %d-%d: no warning logged", tt.min, tt.max)
		case !overlaps && len(doc.Warnings) != 0:
			t.Errorf("relay %d-%d: /status warnings %q, want none", tt.min, tt.max, doc.Warnings)
		}
		if overlaps {
			wantAll(t, "turnd status", statusOutput(t, "--http", srv.HTTP), "warning:      relay ports")
		}
	}
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
