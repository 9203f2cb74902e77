package deploytest

import (
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

var offloadDropIn = filepath.Join(repoRoot, "deploy", "systemd", "offload.conf")

// offloadSettings is the whole drop-in: the kernel path's capabilities and
// its one system call. Anything more loosens the sandbox for everyone who
// turns offload on, so a new line must be argued for here.
var offloadSettings = map[string]string{
	"AmbientCapabilities":   "CAP_BPF CAP_NET_ADMIN",
	"CapabilityBoundingSet": "CAP_BPF CAP_NET_ADMIN",
	"SystemCallFilter":      "bpf",
}

// offloadExposure is what `systemd-analyze security` may see change with the
// drop-in: the two capabilities and bpf(2) let through the filter.
var offloadExposure = []string{
	"CapabilityBoundingSet=~CAP_BPF",
	"CapabilityBoundingSet=~CAP_NET_ADMIN",
	"SystemCallFilter=~@privileged",
}

// unitWithDropIn writes the unit and the offload drop-in into a directory
// of the test's as NAME.service and NAME.service.d/offload.conf, where
// systemd-analyze reads a unit given by path and its drop-ins (it has no
// option for a drop-in of an uninstalled unit). stub, when set, replaces
// /usr/local/bin/turnd, which verify requires to exist.
func unitWithDropIn(t *testing.T, stub string) string {
	t.Helper()
	unit, err := os.ReadFile(unitFile)
	if err != nil {
		t.Fatal(err)
	}
	dropIn, err := os.ReadFile(offloadDropIn)
	if err != nil {
		t.Fatal(err)
	}
	text := string(unit)
	if stub != "" {
		if !strings.Contains(text, "/usr/local/bin/turnd ") {
			t.Fatal("unit no longer runs /usr/local/bin/turnd; update this test")
		}
		text = strings.ReplaceAll(text, "/usr/local/bin/turnd ", stub+" ")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "turnd.service")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(path+".d", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(path+".d", "offload.conf"), dropIn, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestSystemdOffloadDropInVerifies: the unit with the drop-in passes
// `systemd-analyze verify` (which warns about an unknown or malformed line of
// the drop-in as of the unit), and the drop-in holds exactly the kernel
// path's settings, each with a comment above it saying why.
func TestSystemdOffloadDropInVerifies(t *testing.T) {
	analyze := tool(t, "SYSTEMD_ANALYZE", "systemd-analyze")
	stub := filepath.Join(t.TempDir(), "turnd")
	if err := os.WriteFile(stub, []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, err := run(nil, analyze, "verify", "--man=no", unitWithDropIn(t, stub))
	if err != nil || strings.TrimSpace(stdout+stderr) != "" {
		t.Errorf("systemd-analyze verify with the drop-in: %v\n%s%s", err, stdout, stderr)
	}

	data, err := os.ReadFile(offloadDropIn)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	lines := strings.Split(string(data), "\n")
	for i, line := range lines {
		key, value, ok := strings.Cut(line, "=")
		if !ok || strings.HasPrefix(line, "#") {
			continue
		}
		if _, dup := got[key]; dup {
			t.Errorf("offload.conf sets %s twice", key)
		}
		got[key] = value
		if i == 0 || !strings.HasPrefix(lines[i-1], "# ") {
			t.Errorf("offload.conf: %s has no comment above it saying why", line)
		}
	}
	if !maps.Equal(got, offloadSettings) {
		t.Errorf("offload.conf sets %v, want exactly %v", got, offloadSettings)
	}
	if !strings.HasPrefix(strings.TrimSpace(stripComments(string(data))), "[Service]\n") {
		t.Error("offload.conf does not start with [Service]")
	}
}

// TestSystemdOffloadDropInExposure: the drop-in costs the sandbox only what
// the kernel path needs. Between the two `systemd-analyze security` reports
// exactly the capability and system call checks change, the score rises by
// no more than they cost, and both scores are the ones the README states.
func TestSystemdOffloadDropInExposure(t *testing.T) {
	analyze := tool(t, "SYSTEMD_ANALYZE", "systemd-analyze")
	plainScore, plain := securityReport(t, analyze, unitFile)
	score, withDropIn := securityReport(t, analyze, unitWithDropIn(t, ""))
	t.Logf("systemd-analyze security: %.1f plain, %.1f with offload.conf", plainScore, score)

	var changed []string
	var cost float64
	for name, check := range withDropIn {
		before, ok := plain[name]
		if !ok {
			t.Errorf("check %s appears only with the drop-in", name)
			continue
		}
		if check != before {
			changed = append(changed, name)
			cost += check.exposure
			t.Logf("%s: %q -> %q (%.1f)", name, before.description, check.description, check.exposure)
		}
	}
	slices.Sort(changed)
	if !slices.Equal(changed, offloadExposure) {
		t.Errorf("checks changed by the drop-in = %v, want exactly %v", changed, offloadExposure)
	}
	for _, name := range offloadExposure {
		if c := withDropIn[name]; c.passed {
			t.Errorf("%s still passes with the drop-in: it grants nothing", name)
		}
	}
	// The overall level is not a plain sum, but never more than one.
	if score > plainScore+cost+0.05 || score > maxExposure {
		t.Errorf("exposure with the drop-in %.1f > plain %.1f + its checks' %.1f, or > %.1f", score, plainScore, cost, maxExposure)
	}

	readme, err := os.ReadFile(filepath.Join(repoRoot, "deploy", "systemd", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`scores the unit\s+\*\*([0-9.]+) OK\*\*`).FindSubmatch(readme)
	if m == nil || string(m[1]) != strconv.FormatFloat(plainScore, 'f', 1, 64) {
		t.Errorf("deploy/systemd/README.md does not state the unit's score %.1f (\"scores the unit **%.1f OK**\")", plainScore, plainScore)
	}
	m = regexp.MustCompile(`from\s+\*\*([0-9.]+)\*\*\s+to\s+\*\*([0-9.]+) OK\*\*`).FindSubmatch(readme)
	if m == nil || string(m[1]) != strconv.FormatFloat(plainScore, 'f', 1, 64) || string(m[2]) != strconv.FormatFloat(score, 'f', 1, 64) {
		t.Errorf("deploy/systemd/README.md does not state the drop-in's scores (\"from **%.1f** to **%.1f OK**\")", plainScore, score)
	}
	if !strings.Contains(string(readme), "deploy/systemd/offload.conf /etc/systemd/system/turnd.service.d/offload.conf") {
		t.Error("deploy/systemd/README.md does not install offload.conf as a drop-in of turnd.service")
	}
}

// securityCheck is one line of `systemd-analyze security`.
type securityCheck struct {
	passed      bool
	description string
	exposure    float64
}

var securityLine = regexp.MustCompile(`^([✓✗]) (\S+)\s+(.*?)(?:\s+([0-9]+\.[0-9]))?\s*$`)

// securityReport runs `systemd-analyze security` on a unit file (and the
// drop-ins in its NAME.d directory) and returns the overall score and every
// check by name.
func securityReport(t *testing.T, analyze, unit string) (float64, map[string]securityCheck) {
	t.Helper()
	stdout, stderr, err := run(nil, analyze, "security", "--offline=yes", "--no-pager", unit)
	if err != nil {
		t.Fatalf("systemd-analyze security %s: %v\n%s", unit, err, stderr)
	}
	m := regexp.MustCompile(`Overall exposure level for turnd\.service: ([0-9.]+)`).FindStringSubmatch(stdout)
	if m == nil {
		t.Fatalf("no overall exposure level in:\n%s", stdout)
	}
	score, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		t.Fatal(err)
	}
	checks := map[string]securityCheck{}
	for _, line := range strings.Split(stdout, "\n") {
		f := securityLine.FindStringSubmatch(line)
		if f == nil {
			continue
		}
		c := securityCheck{passed: f[1] == "✓", description: f[3]}
		if f[4] != "" {
			if c.exposure, err = strconv.ParseFloat(f[4], 64); err != nil {
				t.Fatal(err)
			}
		}
		if _, dup := checks[f[2]]; dup {
			t.Fatalf("check %s listed twice:\n%s", f[2], stdout)
		}
		checks[f[2]] = c
	}
	if len(checks) < 50 {
		t.Fatalf("read only %d checks from:\n%s", len(checks), stdout)
	}
	return score, checks
}
