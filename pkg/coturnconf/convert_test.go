package coturnconf

import (
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/turnd/turnd/pkg/config"
)

// base makes a small config valid, so each case states only what it tests.
const base = "relay-ip=192.0.2.1\nstatic-auth-secret=s\n"

func convertText(t *testing.T, text string, args ...string) (Result, error) {
	t.Helper()
	in, err := ParseFile(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	return Convert(in.Then(ParseArgs(args)))
}

func TestConvert(t *testing.T) {
	tests := []struct {
		name     string
		text     string
		args     []string
		check    func(t *testing.T, c config.Config)
		findings []string // substrings that some finding must contain
	}{
		{
			name: "users, and a key-form user reported instead of carried",
			text: "relay-ip=192.0.2.1\nuser=alice:0x0123456789abcdef0123456789abcdef\nuser=bob: pw:with:colons\n",
			check: func(t *testing.T, c config.Config) {
				if len(c.Auth.Users) != 1 || c.Auth.Users["bob"] != "pw:with:colons" {
					t.Errorf("users = %v, want only bob with his password", c.Auth.Users)
				}
			},
			findings: []string{`line 2: warning: user: user "alice" is given as a key`},
		},
		{
			name: "REST secrets: every one kept in order; user= ignored as coturn does",
			text: "relay-ip=192.0.2.1\nuser=a:b\nstatic-auth-secret=one\nstatic-auth-secret=two\nrest-api-separator=-\n",
			check: func(t *testing.T, c config.Config) {
				if !slices.Equal(c.Auth.Secrets, []string{"one", "two"}) || len(c.Auth.Users) != 0 || c.Auth.RESTSeparator != "-" {
					t.Errorf("auth = %+v", c.Auth)
				}
			},
			findings: []string{"line 2: warning: user: not carried over: coturn ignores user="},
		},
		{
			name:     "use-auth-secret without secrets",
			text:     "relay-ip=192.0.2.1\nuse-auth-secret\nuser=a:b\n",
			findings: []string{"line 2: warning: use-auth-secret: no static-auth-secret", "no credential was carried over"},
		},
		{
			name: "listeners from listening-ip × ports; relay from the first listening IP",
			text: "static-auth-secret=s\nlistening-ip=192.0.2.1\nlistening-ip=2001:db8::1\nlistening-port=3000\nno-tcp\n",
			check: func(t *testing.T, c config.Config) {
				if !slices.Equal(c.Listen.UDP, []string{"192.0.2.1:3000", "[2001:db8::1]:3000"}) || len(c.Listen.TCP) != 0 {
					t.Errorf("listen = %+v", c.Listen)
				}
				if c.Relay.Address != "192.0.2.1" {
					t.Errorf("relay.address = %q", c.Relay.Address)
				}
			},
			findings: []string{"relay-ip: not set: coturn relayed from whichever listening address"},
		},
		{
			name: "TLS listeners with a certificate; DTLS reported",
			text: base + "cert=/c.pem\npkey=/k.pem\ntls-listening-port=443\n",
			check: func(t *testing.T, c config.Config) {
				if !slices.Equal(c.Listen.TLS, []string{"0.0.0.0:443"}) || c.TLS.CertFile != "/c.pem" || c.TLS.KeyFile != "/k.pem" {
					t.Errorf("tls = %+v %+v", c.Listen.TLS, c.TLS)
				}
			},
			findings: []string{"no-dtls: not set: coturn also accepted DTLS on UDP port 443"},
		},
		{
			name: "external-ip public/private chooses the relay address and allows the private half",
			text: "static-auth-secret=s\nexternal-ip=198.51.100.1/10.0.0.1\nexternal-ip=198.51.100.2/10.0.0.2\n",
			check: func(t *testing.T, c config.Config) {
				if c.Relay.Address != "10.0.0.1" || c.Relay.ExternalAddress != "198.51.100.1" {
					t.Errorf("relay = %+v", c.Relay)
				}
				if !slices.Equal(c.Peers.Allowed, []string{"10.0.0.1", "10.0.0.2"}) {
					t.Errorf("peers.allowed = %v, want both private halves (coturn allows them)", c.Peers.Allowed)
				}
			},
			findings: []string{"line 3: warning: external-ip: maps 10.0.0.2, which is not turnd's relay address"},
		},
		{
			name: "plain external-ip only: relay binds everywhere and advertises it",
			text: "static-auth-secret=s\nexternal-ip=198.51.100.1\nexternal-ip=198.51.100.2\n",
			check: func(t *testing.T, c config.Config) {
				if c.Relay.Address != "0.0.0.0" || c.Relay.ExternalAddress != "198.51.100.1" {
					t.Errorf("relay = %+v", c.Relay)
				}
			},
			findings: []string{"line 3: warning: external-ip: coturn accepts one external-ip without a private part"},
		},
		{
			name: "relay-ip of both families: one each, external-ip applied to its family",
			text: "static-auth-secret=s\nrelay-ip=2001:db8::1\nrelay-ip=192.0.2.1\nrelay-ip=192.0.2.2\nexternal-ip=198.51.100.1\n",
			check: func(t *testing.T, c config.Config) {
				if c.Relay.Address != "2001:db8::1,192.0.2.1" || c.Relay.ExternalAddress != "198.51.100.1" {
					t.Errorf("relay = %+v", c.Relay)
				}
			},
			findings: []string{"line 4: warning: relay-ip: turnd relays from one address of each family, 192.0.2.1"},
		},
		{
			name: "external-ip of another family than the relay",
			text: "static-auth-secret=s\nrelay-ip=2001:db8::1\nexternal-ip=198.51.100.1\n",
			check: func(t *testing.T, c config.Config) {
				if c.Relay.Address != "2001:db8::1" || c.Relay.ExternalAddress != "" {
					t.Errorf("relay = %+v", c.Relay)
				}
			},
			findings: []string{"line 3: warning: external-ip: coturn applies it to relay addresses of the same family only"},
		},
		{
			name: "peers: ranges kept, mapped and invalid entries dropped, loopback",
			text: base + "allow-loopback-peers\ndenied-peer-ip=10.0.0.0-10.255.255.255\ndenied-peer-ip=10.1.0.0-10.1.0.255\n" +
				"denied-peer-ip=::ffff:0.0.0.0-::ffff:255.255.255.255\ndenied-peer-ip=1.2.3\nallowed-peer-ip=10.0.0.5\n",
			check: func(t *testing.T, c config.Config) {
				if !c.Peers.AllowLoopback || !slices.Equal(c.Peers.Denied, []string{"10.0.0.0-10.255.255.255"}) ||
					!slices.Equal(c.Peers.Allowed, []string{"10.0.0.5"}) {
					t.Errorf("peers = %+v", c.Peers)
				}
			},
			findings: []string{"line 5: note: denied-peer-ip: 10.1.0.0-10.1.0.255 is covered by an entry above",
				"line 6: warning: denied-peer-ip: an IPv4-mapped IPv6 entry", "deny IPv4 peers in 0.0.0.0/0",
				`line 7: warning: denied-peer-ip: "1.2.3" is not an IP address`},
		},
		{
			name: "quotas, lifetimes, relay ports and TCP relays",
			text: base + "user-quota=3\ntotal-quota=30\nmax-allocate-lifetime=600\npermission-lifetime=60\n" +
				"channel-lifetime=900\nmin-port=40000\nmax-port=40100\nno-tcp-relay\n",
			check: func(t *testing.T, c config.Config) {
				l := c.Limits
				if l.UserAllocations != 3 || l.TotalAllocations != 30 || l.MaxLifetime != 10*time.Minute ||
					l.PermissionLifetime != time.Minute || l.ChannelLifetime != 15*time.Minute {
					t.Errorf("limits = %+v", l)
				}
				if c.Relay.MinPort != 40000 || c.Relay.MaxPort != 40100 || c.Relay.TCPAllocations {
					t.Errorf("relay = %+v", c.Relay)
				}
			},
		},
		{
			name: "prometheus: address and port become http.address",
			text: base + "prometheus\nprometheus-port=9100\nprometheus-address=192.0.2.1\n",
			check: func(t *testing.T, c config.Config) {
				if c.HTTP.Address != "192.0.2.1:9100" {
					t.Errorf("http.address = %q", c.HTTP.Address)
				}
			},
		},
		{
			name: "no prometheus: HTTP stays on loopback",
			text: base,
			check: func(t *testing.T, c config.Config) {
				if c.HTTP.Address != "127.0.0.1:9641" {
					t.Errorf("http.address = %q", c.HTTP.Address)
				}
			},
		},
		{
			name: "alternate servers in coturn's forms",
			text: base + "alternate-server=192.0.2.7\nalternate-server=192.0.2.8:3479\nalternate-server=[2001:db8::9]:3478\n",
			check: func(t *testing.T, c config.Config) {
				want := []string{"192.0.2.7:3478", "192.0.2.8:3479", "[2001:db8::9]:3478"}
				if !slices.Equal(c.Drain.AlternateServers, want) {
					t.Errorf("alternates = %v, want %v", c.Drain.AlternateServers, want)
				}
			},
			findings: []string{"redirects only while draining"},
		},
		{
			name: "single-valued options: the last wins, flags can be switched off again",
			text: base + "realm=a\nrealm=b\nno-udp\nno-udp=off\n",
			args: []string{"--realm=c"},
			check: func(t *testing.T, c config.Config) {
				if c.Realm != "c" || len(c.Listen.UDP) != 1 {
					t.Errorf("realm %q, udp %v", c.Realm, c.Listen.UDP)
				}
			},
			findings: []string{"argument 1: warning: realm: given 3 times (line 3, line 4, argument 1); coturn uses the last one"},
		},
		{
			name: "log level and pidfile",
			text: base + "Verbose\npidfile=/run/turnserver.pid\n",
			check: func(t *testing.T, c config.Config) {
				if c.Log.Level != "debug" || c.PIDFile != "/run/turnserver.pid" {
					t.Errorf("log %+v, pidfile %q", c.Log, c.PIDFile)
				}
			},
		},
		{
			name:     "unknown options are reported and skipped, in the file and on the command line",
			text:     base + "frobnicate=1\n",
			args:     []string{"--frobnicate"},
			findings: []string{`line 3: warning: frobnicate: unknown option, ignored (coturn logs "Bad configuration format"`, "argument 1: warning: frobnicate: unknown option, ignored (turnserver would print its usage"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := convertText(t, tt.text, tt.args...)
			for _, want := range tt.findings {
				if !slices.ContainsFunc(res.Findings, func(f Finding) bool { return strings.Contains(f.String(), want) }) {
					t.Errorf("no finding contains %q; findings:\n%s", want, findingsText(res.Findings))
				}
			}
			if tt.check == nil {
				return
			}
			if err != nil {
				t.Fatalf("convert: %v\n%s", err, findingsText(res.Findings))
			}
			tt.check(t, res.Config)
		})
	}
}

func TestConvertRefusesWhatTurndCannotRun(t *testing.T) {
	tests := []struct{ name, text, want string }{
		{"no credential", "relay-ip=192.0.2.1\n", "auth: at least one user or secret is required"},
		{"no address to hand out", "static-auth-secret=s\n", "relay.address: required when every listen address is a wildcard"},
		{"no listener", base + "no-udp\nno-tcp\nno-tls\n", "listen: at least one"},
		{"no usable listening-ip: not everywhere instead", base + "listening-ip=eth0\n", "listen: at least one"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := convertText(t, tt.text)
			if !errors.Is(err, ErrInvalidResult) || !errors.Is(err, config.ErrInvalid) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want ErrInvalidResult with %q", err, tt.want)
			}
			if len(res.YAML) == 0 || len(res.Findings) == 0 {
				t.Error("a refused conversion still returns its YAML and findings")
			}
		})
	}
}

func TestFindingsAreOrdered(t *testing.T) {
	res, _ := convertText(t, base+"userdb=/x\ncli-port=1\n", "--oauth")
	var got []string
	for _, f := range res.Findings {
		got = append(got, f.Pos.String())
	}
	// file lines, then arguments, then findings about the whole config.
	want := []string{"line 3", "line 4", "argument 1", "", "", ""}
	if !slices.Equal(got[:3], want[:3]) || got[len(got)-1] != "" {
		t.Errorf("positions = %q", got)
	}
}

// TestFindingsHideCredentials: no finding repeats a password, key or secret.
func TestFindingsHideCredentials(t *testing.T) {
	secretOptions := []string{"user", "static-auth-secret", "cli-password", "pkey-pwd", "psql-userdb", "redis-userdb"}
	for _, gc := range goldenCases(t) {
		in := gc.input(t)
		res, _ := Convert(in)
		for _, o := range in.Options {
			if !slices.Contains(secretOptions, o.Name) || o.Value == "" {
				continue
			}
			secret := o.Value
			if o.Name == "user" {
				_, secret, _ = strings.Cut(o.Value, ":")
				secret = strings.TrimSpace(secret)
			}
			for _, f := range append(res.Findings, in.Findings...) {
				if strings.Contains(f.Message, secret) {
					t.Errorf("%s: finding %q shows the value of %s", gc.name, f, o.Name)
				}
			}
		}
	}
}

func TestParseBool(t *testing.T) {
	tests := []struct {
		in        string
		on, valid bool
	}{
		{"", true, true}, {"1", true, true}, {"yes", true, true}, {"True", true, true}, {"on", true, true},
		{"0", false, true}, {"no", false, true}, {"false", false, true}, {"off", false, true}, {"OFF", false, true},
		{"maybe", false, false}, {"-1", false, false},
	}
	for _, tt := range tests {
		if on, valid := parseBool(tt.in); on != tt.on || valid != tt.valid {
			t.Errorf("parseBool(%q) = %v, %v; want %v, %v", tt.in, on, valid, tt.on, tt.valid)
		}
	}
}

func TestIntegerIsAtoi(t *testing.T) {
	tests := []struct {
		in       string
		want     int
		ok, note bool
	}{
		{"12", 12, true, false}, {" 12", 12, true, false}, {"12 # comment", 12, true, true}, {"-3", -3, true, false},
		{"7;", 7, true, true},
		// Not valid: the caller warns once; no note that would disagree.
		{"x", 0, false, false}, {"0x", 0, false, false},
	}
	for _, tt := range tests {
		c := newConverter(Input{})
		valid := func(n int) bool { return n != 0 }
		if got, ok := c.integer(Option{Name: "n", Value: tt.in}, valid); got != tt.want || ok != tt.ok || (len(c.findings) > 0) != tt.note {
			t.Errorf("integer(%q) = %d, %v with findings %v; want %d, %v, note %v", tt.in, got, ok, c.findings, tt.want, tt.ok, tt.note)
		}
	}
}

// TestOneFindingPerBadPort: a port coturn reads as 0 gets one warning that
// says what is used, not also a note that it was read as 0.
func TestOneFindingPerBadPort(t *testing.T) {
	in, err := ParseFile(strings.NewReader("listening-port=abc\nrealm=x\nuser=a:b\nrelay-ip=192.0.2.1\n"))
	if err != nil {
		t.Fatal(err)
	}
	res, _ := Convert(in)
	n := 0
	for _, f := range res.Findings {
		if f.Option == "listening-port" {
			n++
			if f.Severity != Warning || !strings.Contains(f.Message, "using coturn's default 3478") {
				t.Errorf("finding %v", f)
			}
		}
	}
	if n != 1 {
		t.Errorf("%d findings for listening-port, want 1: %v", n, res.Findings)
	}
}

func TestFmtDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		time.Hour: "1h", 10 * time.Minute: "10m", 90 * time.Second: "1m30s", 0: "0s", 3*time.Hour + 5*time.Second: "3h0m5s",
	} {
		if got := fmtDuration(d); got != want {
			t.Errorf("fmtDuration(%v) = %q, want %q", d, got, want)
		}
		if back, err := time.ParseDuration(fmtDuration(d)); err != nil || back != d {
			t.Errorf("%q does not parse back to %v", fmtDuration(d), d)
		}
	}
}

// TestMigrationGuideCoversEveryOption keeps docs/migration.md's tables in
// step with the option table: every option the converter knows is named in
// the first cell of a table row.
func TestMigrationGuideCoversEveryOption(t *testing.T) {
	doc, err := os.ReadFile("../../docs/migration.md")
	if err != nil {
		t.Fatal(err)
	}
	named := map[string]bool{}
	for _, line := range strings.Split(string(doc), "\n") {
		cells := strings.Split(line, "|")
		if !strings.HasPrefix(line, "| `") || len(cells) < 3 {
			continue
		}
		for i, part := range strings.Split(cells[1], "`") {
			if i%2 == 1 { // inside backticks
				named[part] = true
			}
		}
	}
	for _, s := range specs {
		if !named[s.name] {
			t.Errorf("docs/migration.md has no table row naming `%s`", s.name)
		}
	}
}

func findingsText(fs []Finding) string {
	var b strings.Builder
	for _, f := range fs {
		b.WriteString(f.String() + "\n")
	}
	return b.String()
}
