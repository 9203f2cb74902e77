package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestHelpAndExitCodes(t *testing.T) {
	tests := []struct {
		args   []string
		code   int
		out    []string // in stdout+stderr
		notOut []string
		inOut  bool // the wanted text is on stdout
	}{
		{args: []string{"help"}, code: 0, inOut: true, out: []string{"check-config", "import-coturn", "status", "drain", "default-config", "version"}},
		{args: []string{"--help"}, code: 0, inOut: true, out: []string{"commands:", "import-coturn"}},
		{args: []string{"-h"}, code: 0, inOut: true, out: []string{"commands:", "import-coturn"}},
		{args: []string{"help", "status"}, code: 0, inOut: true, out: []string{"usage: turnd status", "-json"}},
		{args: []string{"status", "--help"}, code: 0, out: []string{"usage: turnd status", "-json"}},
		{args: []string{"help", "version"}, code: 0, inOut: true, out: []string{"usage: turnd version"}, notOut: []string{"  -config"}},
		{args: []string{"version", "--help"}, code: 0, out: []string{"usage: turnd version"}, notOut: []string{"  -config"}},
		{args: []string{"default-config", "--help"}, code: 0, out: []string{"usage: turnd default-config"}, notOut: []string{"  -config"}},
		{args: []string{"help", "check-config"}, code: 0, inOut: true, out: []string{"-config"}},
		{args: []string{"help", "sessions"}, code: 0, inOut: true, out: []string{"usage: turnd sessions", "-fleet", "NODE column"}},
		{args: []string{"disconnect", "--help"}, code: 0, out: []string{"usage: turnd disconnect", "on every node"}},
		{args: []string{"--version"}, code: 0, inOut: true, out: []string{"turnd " + version}},
		{args: []string{"version"}, code: 0, inOut: true, out: []string{"turnd " + version}},
		{args: []string{"stauts"}, code: 2, out: []string{`unknown command "stauts"`, `did you mean "status"`}},
		{args: []string{"chekc-config"}, code: 2, out: []string{`did you mean "check-config"`}},
		{args: []string{"help", "stauts"}, code: 2, out: []string{`did you mean "status"`}},
		{args: []string{"frobnicate"}, code: 2, out: []string{`unknown command "frobnicate"`}, notOut: []string{"did you mean"}},
		{args: []string{"version", "extra"}, code: 2, out: []string{"unexpected argument"}},
		{args: []string{"-c", "/etc/turnserver.conf"}, code: 2, out: []string{"coturn", "turnd import-coturn /etc/turnserver.conf"}},
	}
	for _, tt := range tests {
		var stdout, stderr bytes.Buffer
		code := run(tt.args, &stdout, &stderr)
		all := stdout.String() + stderr.String()
		if code != tt.code {
			t.Errorf("turnd %q: exit %d, want %d\n%s", tt.args, code, tt.code, all)
		}
		where := all
		if tt.inOut {
			where = stdout.String()
		}
		for _, w := range tt.out {
			if !strings.Contains(where, w) {
				t.Errorf("turnd %q: output lacks %q:\n%s", tt.args, w, all)
			}
		}
		for _, w := range tt.notOut {
			if strings.Contains(all, w) {
				t.Errorf("turnd %q: output has %q:\n%s", tt.args, w, all)
			}
		}
	}
}

// TestHelpListsEveryCommand: each command has one line in `turnd help`.
func TestHelpListsEveryCommand(t *testing.T) {
	var b bytes.Buffer
	printHelp(&b)
	for _, c := range commands() {
		n := 0
		for _, line := range strings.Split(b.String(), "\n") {
			if strings.HasPrefix(strings.TrimSpace(line), c.name+" ") {
				n++
			}
		}
		if n != 1 || c.summary == "" {
			t.Errorf("command %s: %d lines in help, summary %q", c.name, n, c.summary)
		}
	}
}

func TestNearestCommand(t *testing.T) {
	for in, want := range map[string]string{"stat": "status", "drian": "drain", "verison": "version", "import": "import-coturn", "xyzzy": ""} {
		if got := nearestCommand(in); got != want {
			t.Errorf("nearestCommand(%q) = %q, want %q", in, got, want)
		}
	}
}
