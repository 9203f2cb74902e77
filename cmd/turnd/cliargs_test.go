package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/turnd/turnd/pkg/config"
)

func TestSplitImportArgs(t *testing.T) {
	tests := []struct {
		args  []string
		file  string
		flags []string
		err   string
	}{
		{args: []string{"a.conf"}, file: "a.conf"},
		{args: []string{"-"}, file: "-"},
		{args: []string{"a.conf", "--", "--realm=x"}, file: "a.conf", flags: []string{"--realm=x"}},
		{args: []string{"--", "-p", "3478"}, flags: []string{"-p", "3478"}},
		{args: []string{"--help"}, file: "help"},
		{args: nil, err: "nothing to convert"},
		{args: []string{"--"}, err: "nothing to convert"},
		{args: []string{"a", "b"}, err: "one file only"},
		{args: []string{"--realm=x"}, err: "turnserver flags go after --"},
	}
	for _, tt := range tests {
		file, flags, err := splitImportArgs(tt.args)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%q: err = %v, want %q", tt.args, err, tt.err)
			}
			continue
		}
		if err != nil || file != tt.file || !slices.Equal(flags, tt.flags) {
			t.Errorf("%q: got %q %q %v", tt.args, file, flags, err)
		}
	}
}

func TestHTTPTarget(t *testing.T) {
	dir := t.TempDir()
	write := func(name, addr string) string {
		p := filepath.Join(dir, name)
		body := "auth: {users: {a: b}}\nhttp: {address: \"" + addr + "\"}\n"
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	tests := []struct {
		flag, cfg, want, err string
	}{
		{want: "127.0.0.1:9641"},
		{flag: "192.0.2.1:80", want: "192.0.2.1:80"},
		{flag: "0.0.0.0:9641", want: "127.0.0.1:9641"},
		{flag: "[::]:9641", want: "[::1]:9641"},
		{cfg: write("a.yaml", "0.0.0.0:9100"), want: "127.0.0.1:9100"},
		{flag: "127.0.0.1:1", cfg: write("b.yaml", "0.0.0.0:9100"), want: "127.0.0.1:1"},
		{cfg: write("c.yaml", ""), err: errNoHTTP.Error()},
		{flag: "127.0.0.1:0", err: "port 0"},
		{flag: "nonsense", err: "missing port"},
	}
	for _, tt := range tests {
		got, err := httpTarget(tt.flag, tt.cfg)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("httpTarget(%q, %q) err = %v, want %q", tt.flag, tt.cfg, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("httpTarget(%q, %q) = %q, %v; want %q", tt.flag, tt.cfg, got, err, tt.want)
		}
	}
}

func TestResolvePID(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.pid")
	bad := filepath.Join(dir, "bad.pid")
	_ = os.WriteFile(good, []byte("1234\n"), 0o600)
	_ = os.WriteFile(bad, []byte("x\n"), 0o600)
	withPidfile := &config.Config{PIDFile: good}
	tests := []struct {
		pid     int
		pidFile string
		cfg     *config.Config
		want    int
		err     string
	}{
		{pid: 7, want: 7},
		{pid: 7, cfg: withPidfile, want: 7},
		{pidFile: good, want: 1234},
		{cfg: withPidfile, want: 1234},
		{err: "give --pid, --pidfile or --config"},
		{pid: 7, pidFile: good, err: "not both"},
		{pid: -1, err: "not a process ID"},
		{cfg: &config.Config{}, err: "sets no pidfile"},
		{pidFile: bad, err: "is not a process ID"},
		{pidFile: filepath.Join(dir, "missing"), err: "read pidfile"},
	}
	for _, tt := range tests {
		got, err := resolvePID(tt.pid, tt.pidFile, tt.cfg)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%+v: err = %v, want %q", tt, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("%+v: got %d, %v", tt, got, err)
		}
	}
}

func TestCheckTurndRefusesOtherProcesses(t *testing.T) {
	// A pidfile whose number now belongs to another program: sleep.
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	if err := checkTurnd(cmd.Process.Pid); !errors.Is(err, errNotTurnd) || !strings.Contains(err.Error(), `"sleep"`) {
		t.Fatalf("checkTurnd(sleep) = %v, want errNotTurnd naming sleep", err)
	}
	if !processAlive(cmd.Process.Pid) {
		t.Error("processAlive(sleep) = false while it runs")
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	if processAlive(cmd.Process.Pid) {
		t.Error("processAlive = true after the process was reaped")
	}
}

func TestProcessAliveTreatsZombiesAsExited(t *testing.T) {
	cmd := exec.Command("true")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Wait() })
	// Wait for the exit without reaping the child (WNOWAIT): it is then a zombie.
	var info unix.Siginfo
	if err := unix.Waitid(unix.P_PID, cmd.Process.Pid, &info, unix.WEXITED|unix.WNOWAIT, nil); err != nil {
		t.Fatal(err)
	}
	if processAlive(cmd.Process.Pid) {
		t.Fatal("an exited, unreaped child still counts as alive")
	}
}
