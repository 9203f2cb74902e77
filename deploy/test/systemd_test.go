package deploytest

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

var unitFile = filepath.Join(repoRoot, "deploy", "systemd", "turnd.service")

// maxExposure is the highest `systemd-analyze security` score accepted:
// systemd calls up to 2.0 "OK".
const maxExposure = 2.0

// TestSystemdUnitVerifies runs `systemd-analyze verify`, which checks that
// every directive is known and well-formed and that the executables exist.
// turnd is not installed here, so a copy of the unit points at a stand-in.
func TestSystemdUnitVerifies(t *testing.T) {
	analyze := tool(t, "SYSTEMD_ANALYZE", "systemd-analyze")
	unit, err := os.ReadFile(unitFile)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	stub := filepath.Join(dir, "turnd")
	if err := os.WriteFile(stub, []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(unit), "/usr/local/bin/turnd ") {
		t.Fatal("unit no longer runs /usr/local/bin/turnd; update this test")
	}
	copyPath := filepath.Join(dir, "turnd.service")
	text := strings.ReplaceAll(string(unit), "/usr/local/bin/turnd ", stub+" ")
	if err := os.WriteFile(copyPath, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, err := run(nil, analyze, "verify", "--man=no", copyPath)
	if err != nil || strings.TrimSpace(stdout+stderr) != "" {
		t.Errorf("systemd-analyze verify: %v\n%s%s", err, stdout, stderr)
	}
}

// TestSystemdUnitExposure keeps the sandbox at "OK" or better.
func TestSystemdUnitExposure(t *testing.T) {
	analyze := tool(t, "SYSTEMD_ANALYZE", "systemd-analyze")
	stdout, stderr, err := run(nil, analyze, "security", "--offline=yes", "--no-pager", unitFile)
	if err != nil {
		t.Fatalf("systemd-analyze security: %v\n%s", err, stderr)
	}
	m := regexp.MustCompile(`Overall exposure level for turnd\.service: ([0-9.]+)`).FindStringSubmatch(stdout)
	if m == nil {
		t.Fatalf("no overall exposure level in:\n%s", stdout)
	}
	score, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("systemd-analyze security exposure: %.1f", score)
	if score > maxExposure {
		t.Errorf("exposure %.1f > %.1f:\n%s", score, maxExposure, stdout)
	}
}

// TestSystemdStopOutlastsDrain: TimeoutStopSec must be at least the example
// config's drain.delay + drain.timeout, or systemd would SIGKILL live calls.
func TestSystemdStopOutlastsDrain(t *testing.T) {
	unit, err := os.ReadFile(unitFile)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(repoRoot, "deploy", "systemd", "turnd.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	drain := parseTurndConfig(t, data).drainSeconds(t)
	m := regexp.MustCompile(`(?m)^TimeoutStopSec=(.+)$`).FindStringSubmatch(string(unit))
	if m == nil {
		t.Fatal("no TimeoutStopSec in the unit")
	}
	stop := systemdSeconds(t, m[1])
	if stop < drain {
		t.Errorf("TimeoutStopSec=%s (%ds) is shorter than the example drain (%ds)", m[1], stop, drain)
	}
	for _, want := range []string{"Type=notify", "KillSignal=SIGTERM", "KillMode=mixed", "ExecReload=/bin/kill -HUP $MAINPID"} {
		if !strings.Contains(string(unit), "\n"+want+"\n") {
			t.Errorf("unit lacks %q", want)
		}
	}
}

// systemdSeconds parses the time spans the unit uses ("1h 30s", "90min").
func systemdSeconds(t *testing.T, span string) int64 {
	t.Helper()
	units := map[string]int64{"h": 3600, "min": 60, "m": 60, "s": 1, "": 1}
	var total int64
	for _, part := range strings.Fields(span) {
		m := regexp.MustCompile(`^([0-9]+)([a-z]*)$`).FindStringSubmatch(part)
		if m == nil {
			t.Fatalf("cannot parse time span %q", span)
		}
		mult, ok := units[m[2]]
		if !ok {
			t.Fatalf("unknown unit in %q", span)
		}
		n, _ := strconv.ParseInt(m[1], 10, 64)
		total += n * mult
	}
	return total
}

// TestSystemdAdminTokenFile: the example config's admin_token_file is the
// file the systemd README creates, readable by group turnd (turnd runs as
// user turnd); uncommented, the config passes check-config, and the unit's
// sandbox does not hide the file.
func TestSystemdAdminTokenFile(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(repoRoot, "deploy", "systemd", "turnd.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	line := regexp.MustCompile(`(?m)^  # admin_token_file: (\S+)$`)
	m := line.FindSubmatch(data)
	if m == nil {
		t.Fatal("deploy/systemd/turnd.yaml has no commented http.admin_token_file example")
	}
	path := string(m[1])
	readme, err := os.ReadFile(filepath.Join(repoRoot, "deploy", "systemd", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"umask 0027", "> " + path, "chgrp turnd " + path} {
		if !strings.Contains(string(readme), want) {
			t.Errorf("deploy/systemd/README.md does not create %s with %q", path, want)
		}
	}
	unit, err := os.ReadFile(unitFile)
	if err != nil {
		t.Fatal(err)
	}
	for _, hiding := range []string{"InaccessiblePaths=", "TemporaryFileSystem=", "LoadCredential="} {
		if strings.Contains(string(unit), "\n"+hiding) {
			t.Errorf("the unit has %s: check it leaves %s readable", hiding, path)
		}
	}
	checkConfig(t, turndBin(t), "turnd.yaml", line.ReplaceAll(data, []byte("  admin_token_file: $1")), "192.0.2.1")
}

// TestSystemdUnitHandsOver: the unit and the example config keep what
// `turnd upgrade` under systemd needs (deploy/systemd/README.md, "Upgrading
// in place"): notifications from the successor and MAINPID accepted, no
// SIGTERM to an old process still draining TLS, the hand-over socket and the
// pidfile in the unit's runtime directory, and the old process exiting by
// itself once its drain ends.
func TestSystemdUnitHandsOver(t *testing.T) {
	unit, err := os.ReadFile(unitFile)
	if err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]string{
		// The successor's READY=1 may reach systemd before the old
		// process's MAINPID=; "main" would drop it.
		"NotifyAccess": "all",
		// control-group would SIGTERM an old process draining TLS too (a
		// second SIGTERM stops it at once); process would leave it behind.
		"KillMode":         "mixed",
		"RuntimeDirectory": "turnd",
		// $MAINPID follows the hand-over, so a reload reaches the successor.
		"ExecReload": "/bin/kill -HUP $MAINPID",
	} {
		if got := unitSetting(string(unit), key); got != want {
			t.Errorf("unit: %s=%s, want %s", key, got, want)
		}
	}
	data, err := os.ReadFile(filepath.Join(repoRoot, "deploy", "systemd", "turnd.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	c := parseTurndConfig(t, data)
	if c.Handover == nil {
		t.Fatal("deploy/systemd/turnd.yaml has no handover section (the user turnd's default socket is not in /run/turnd)")
	}
	for what, p := range map[string]string{"handover.socket": c.Handover.Socket, "pidfile": c.PIDFile} {
		if filepath.Dir(p) != "/run/turnd" {
			t.Errorf("%s %q is not in the unit's RuntimeDirectory /run/turnd", what, p)
		}
	}
	if c.Handover.After != "" && c.Handover.After != "exit" {
		t.Errorf("handover.after = %q: under systemd the old process must exit by itself", c.Handover.After)
	}
	readme, err := os.ReadFile(filepath.Join(repoRoot, "deploy", "systemd", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if want := "turnd upgrade --pidfile " + c.PIDFile; !strings.Contains(string(readme), want) {
		t.Errorf("deploy/systemd/README.md does not show %q", want)
	}
}

// unitSetting is the value a unit file gives key: its last assignment, as
// systemd reads it ("" if none).
func unitSetting(unit, key string) string {
	var v string
	for _, line := range strings.Split(unit, "\n") {
		if rest, ok := strings.CutPrefix(line, key+"="); ok {
			v = rest
		}
	}
	return v
}
