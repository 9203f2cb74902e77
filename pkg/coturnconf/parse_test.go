package coturnconf

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"testing/iotest"
)

func TestParseFile(t *testing.T) {
	tests := []struct {
		name     string
		text     string
		want     []Option
		findings []string // substrings, one per finding, in order
	}{
		{name: "comments and blank lines", text: "# a\n   # b\n\n\t\n", want: nil},
		{name: "key=value", text: "realm=example.org\n",
			want: []Option{{Name: "realm", Value: "example.org", Pos: Pos{Line: 1}}}},
		{name: "key value and tabs", text: "\nlistening-port 3478\nrelay-ip\t \t192.0.2.1\n",
			want: []Option{{Name: "listening-port", Value: "3478", Pos: Pos{Line: 2}},
				{Name: "relay-ip", Value: "192.0.2.1", Pos: Pos{Line: 3}}}},
		{name: "a run of separators", text: "realm = = x\n",
			want: []Option{{Name: "realm", Value: "x", Pos: Pos{Line: 1}}}},
		{name: "bare flag", text: "  lt-cred-mech  \n",
			want: []Option{{Name: "lt-cred-mech", Pos: Pos{Line: 1}}}},
		{name: "quoted value keeps inner blanks", text: `psql-userdb="host=db user=turn"` + "\n",
			want: []Option{{Name: "psql-userdb", Value: "host=db user=turn", Pos: Pos{Line: 1}}}},
		{name: "unbalanced quote", text: `realm="x` + "\n",
			want: []Option{{Name: "realm", Value: "x", Pos: Pos{Line: 1}}}},
		{name: "CRLF", text: "realm=x\r\nno-tls\r\n",
			want: []Option{{Name: "realm", Value: "x", Pos: Pos{Line: 1}}, {Name: "no-tls", Pos: Pos{Line: 2}}}},
		{name: "password keeps its '='", text: "user=a:b=c\n",
			want: []Option{{Name: "user", Value: "a:b=c", Pos: Pos{Line: 1}}}},
		{name: "leading dashes", text: "--no-tls\n",
			want:     []Option{{Name: "no-tls", Pos: Pos{Line: 1}}},
			findings: []string{`coturn does not strip "--"`}},
		{name: "no trailing comments", text: "realm=a # b\n",
			want:     []Option{{Name: "realm", Value: "a # b", Pos: Pos{Line: 1}}},
			findings: []string{"no trailing comments"}},
		{name: "semicolon", text: "listening-port=3478;\n",
			want:     []Option{{Name: "listening-port", Value: "3478;", Pos: Pos{Line: 1}}},
			findings: []string{"semicolon"}},
		{name: "no final newline", text: "realm=x",
			want: []Option{{Name: "realm", Value: "x", Pos: Pos{Line: 1}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in, err := ParseFile(strings.NewReader(tt.text))
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(in.Options, tt.want) {
				t.Errorf("options = %+v, want %+v", in.Options, tt.want)
			}
			checkFindings(t, in.Findings, tt.findings)
		})
	}
}

func TestParseFileReadError(t *testing.T) {
	boom := errors.New("boom")
	_, err := ParseFile(iotest.ErrReader(boom))
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v, want it to wrap the reader's error", err)
	}
}

func TestParseArgs(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		want     []Option
		findings []string
	}{
		{name: "long with =", args: []string{"--listening-port=3479", "--no-tls"},
			want: []Option{{Name: "listening-port", Value: "3479", Pos: Pos{Arg: 1}}, {Name: "no-tls", Pos: Pos{Arg: 2}}}},
		{name: "long required value in the next argument", args: []string{"--user", "a:b", "--realm", "-r"},
			want: []Option{{Name: "user", Value: "a:b", Pos: Pos{Arg: 1}}, {Name: "realm", Value: "-r", Pos: Pos{Arg: 3}}}},
		{name: "optional value only after =", args: []string{"--prometheus-port", "9642"},
			want:     []Option{{Name: "prometheus-port", Pos: Pos{Arg: 1}}},
			findings: []string{`unexpected argument "9642", ignored, as coturn does (--prometheus-port takes its value only as --prometheus-port=VALUE)`}},
		{name: "short flags and values", args: []string{"-p", "3480", "-L192.0.2.1", "-af", "-uname:pw"},
			want: []Option{{Name: "listening-port", Value: "3480", Pos: Pos{Arg: 1}},
				{Name: "listening-ip", Value: "192.0.2.1", Pos: Pos{Arg: 3}},
				{Name: "lt-cred-mech", Pos: Pos{Arg: 4}}, {Name: "fingerprint", Pos: Pos{Arg: 4}},
				{Name: "user", Value: "name:pw", Pos: Pos{Arg: 5}}}},
		{name: "short value with =", args: []string{"-p=3480"},
			want:     []Option{{Name: "listening-port", Value: "3480", Pos: Pos{Arg: 1}}},
			findings: []string{"the '=' was dropped"}},
		{name: "missing values", args: []string{"-r", "--user"},
			want:     []Option{{Name: "realm", Value: "--user", Pos: Pos{Arg: 1}}},
			findings: nil},
		{name: "missing value at the end", args: []string{"--realm"}, findings: []string{"needs a value"}},
		{name: "unknown short flag and config file", args: []string{"-Z", "-c", "/etc/turnserver.conf", "-n"},
			findings: []string{"unknown flag", "pass that file to import-coturn itself", "only changes how turnserver starts"}},
		{name: "unknown long options are kept for Convert", args: []string{"--magic=1"},
			want: []Option{{Name: "magic", Value: "1", Pos: Pos{Arg: 1}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := ParseArgs(tt.args)
			if !slices.Equal(in.Options, tt.want) {
				t.Errorf("options = %+v, want %+v", in.Options, tt.want)
			}
			checkFindings(t, in.Findings, tt.findings)
		})
	}
}

func TestInputThenKeepsOrder(t *testing.T) {
	file, err := ParseFile(strings.NewReader("realm=file\n"))
	if err != nil {
		t.Fatal(err)
	}
	in := file.Then(ParseArgs([]string{"--realm=flag"}))
	res, _ := Convert(in)
	if !strings.Contains(string(res.YAML), `realm: "flag"`) {
		t.Errorf("a flag must override the file's single-valued option:\n%s", res.YAML)
	}
	if len(file.Options) != 1 {
		t.Error("Then modified its receiver")
	}
}

// checkFindings asserts one finding per want entry, each containing it.
func checkFindings(t *testing.T, got []Finding, want []string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("findings = %q, want %d", got, len(want))
	}
	for i, w := range want {
		if !strings.Contains(got[i].String(), w) {
			t.Errorf("finding %d = %q, want it to contain %q", i, got[i], w)
		}
	}
}
