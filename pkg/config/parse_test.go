package config

import (
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// TestTestdata parses every testdata file: *.good.yaml must load, and
// *.bad.yaml must fail with every line of its .err sidecar in the error.
func TestTestdata(t *testing.T) {
	good, err := filepath.Glob("testdata/*.good.yaml")
	if err != nil {
		t.Fatal(err)
	}
	bad, err := filepath.Glob("testdata/*.bad.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(good) == 0 || len(bad) == 0 {
		t.Fatalf("no testdata found: %d good, %d bad", len(good), len(bad))
	}
	for _, path := range good {
		t.Run(filepath.Base(path), func(t *testing.T) {
			if _, err := Load(path); err != nil {
				t.Fatalf("Load: %v", err)
			}
		})
	}
	for _, path := range bad {
		t.Run(filepath.Base(path), func(t *testing.T) {
			want := readErrFile(t, path+".err")
			_, err := Load(path)
			if err == nil {
				t.Fatalf("Load succeeded, want an error containing %q", want)
			}
			if !strings.Contains(err.Error(), path) {
				t.Errorf("error does not name the file %s:\n%v", path, err)
			}
			for _, w := range want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error does not contain %q; got:\n%v", w, err)
				}
			}
		})
	}
}

// readErrFile returns the expected error substrings, one per non-blank line.
func readErrFile(t *testing.T, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("every .bad.yaml needs a .err file: %v", err)
	}
	var out []string
	for line := range strings.SplitSeq(string(data), "\n") {
		if line = strings.TrimSpace(line); line != "" {
			out = append(out, line)
		}
	}
	if len(out) == 0 {
		t.Fatalf("%s expects nothing", path)
	}
	return out
}

func mustLoad(t *testing.T, path string) Config {
	t.Helper()
	cfg, err := Load(path)
	if err != nil {
		t.Fatalf("Load(%s): %v", path, err)
	}
	return cfg
}

func TestParseKeepsDefaultsForMissingKeys(t *testing.T) {
	got := mustLoad(t, "testdata/minimal.good.yaml")
	want := Default()
	want.Auth.Users = map[string]string{"alice": "s3cret"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("minimal config:\n got %+v\nwant %+v", got, want)
	}
	// Sections left without a value keep their defaults too.
	got = mustLoad(t, "testdata/null-sections.good.yaml")
	if !reflect.DeepEqual(got, want) {
		t.Errorf("null sections:\n got %+v\nwant %+v", got, want)
	}
}

func TestParseExplicitEmptyListsMeanNone(t *testing.T) {
	cfg := mustLoad(t, "testdata/explicit-empty-lists.good.yaml")
	if len(cfg.Listen.UDP) != 0 {
		t.Errorf("listen.udp = %q, want none", cfg.Listen.UDP)
	}
	if len(cfg.Listen.TCP) != 0 {
		t.Errorf("listen.tcp = %q, want none (written without a value)", cfg.Listen.TCP)
	}
	if want := []string{"127.0.0.1:5349"}; !reflect.DeepEqual(cfg.Listen.TLS, want) {
		t.Errorf("listen.tls = %q, want %q", cfg.Listen.TLS, want)
	}
	if r, err := cfg.ResolveRelay(); err != nil || r.Bind4 != netip.MustParseAddr("127.0.0.1") {
		t.Errorf("ResolveRelay() = %+v, %v, want the TLS listener's 127.0.0.1", r, err)
	}
}

func TestParseEmptyFileIsDefaults(t *testing.T) {
	for _, data := range []string{"", "# only a comment\n", "---\n"} {
		cfg := Default()
		if problems, err := decode([]byte(data), &cfg, indexLines([]byte(data))); err != nil || problems != nil {
			t.Fatalf("decode(%q): %v %v", data, problems, err)
		}
		if !reflect.DeepEqual(cfg, Default()) {
			t.Errorf("decode(%q) = %+v, want Default()", data, cfg)
		}
	}
}

func TestParseIPv6(t *testing.T) {
	cfg := mustLoad(t, "testdata/ipv6.good.yaml")
	if got, want := cfg.Listen.UDP, []string{"[::1]:3478", "127.0.0.1:3478"}; !reflect.DeepEqual(got, want) {
		t.Errorf("listen.udp = %q, want %q", got, want)
	}
	r, err := cfg.ResolveRelay()
	if want := (RelayAddresses{Bind4: netip.MustParseAddr("127.0.0.1"), Bind6: netip.IPv6Unspecified(), External6: netip.MustParseAddr("2001:db8::10")}); err != nil || r != want {
		t.Errorf("ResolveRelay() = %+v, %v, want %+v", r, err, want)
	}
}

func TestParseFull(t *testing.T) {
	got := mustLoad(t, "testdata/full.good.yaml")
	want := Config{
		Realm: "example.org",
		Listen: Listen{
			UDP:    []string{"192.0.2.1:3478", "[2001:db8::1]:3478"},
			TCP:    []string{"192.0.2.1:3478"},
			TLS:    []string{"192.0.2.1:5349"},
			TCPTLS: []string{"192.0.2.1:443"},
			ProxyProtocol: ProxyProtocol{
				Listeners: []string{"192.0.2.1:443"},
				Trusted:   []string{"10.0.0.0/8", "192.0.2.9"},
			},
			UDPSockets: 4, SocketBuffer: 8 << 20,
		},
		TLS: TLS{CertFile: "/etc/turnd/tls.crt", KeyFile: "/etc/turnd/tls.key"},
		Relay: Relay{
			Address: "10.0.0.5", ExternalAddress: "192.0.2.1",
			MinPort: 40000, MaxPort: 40999, TCPAllocations: false,
			Offload: "auto", OffloadInterfaces: []string{"eth0"},
		},
		Auth: Auth{
			Users:           map[string]string{"alice": "s3cret", "bob": "1234"},
			Secrets:         []string{"new-secret", "old-secret"},
			RESTSeparator:   "-",
			MaxRESTValidity: 24 * time.Hour,
			RevokedUsers:    []string{"mallory"}, DisconnectOnRevoke: true,
		},
		Peers: Peers{
			AllowLoopback: true,
			Allowed:       []string{"100.64.0.0/10", "10.0.0.7"},
			Denied:        []string{"10.0.0.0/8", "192.168.0.1-192.168.0.99", "fd00::/8"},
		},
		Limits: Limits{
			TotalAllocations: 10000, UserAllocations: 100,
			MaxLifetime: 30 * time.Minute, PermissionLifetime: 150 * time.Second, ChannelLifetime: 5 * time.Minute,
			IPAllocations: 20, PrefixAllocations: 400, PermissionsPerAllocation: 32, ChannelsPerAllocation: 16, UnauthenticatedRate: 100,
			UserAllocateRate:      10,
			IdleConnectionTimeout: 10 * time.Second, ConnectionsPerIP: 50, ConnectionsPerPrefix: 600, Connections: 5000,
			MaxBPS:     2_000_000,
			UserMaxBPS: map[string]int64{"alice": 0, "bob": 500_000}, TotalBPS: 1_000_000_000,
			UserTotalBPS: 8_000_000, UserTotalBPSOverrides: map[string]int64{"alice": 0, "bob": 1_000_000},
		},
		Drain: Drain{
			Timeout: 2 * time.Hour, Delay: 15 * time.Second,
			AlternateServers: []string{"192.0.2.2:3478", "[2001:db8::2]:3478", "turn-peers.example.org:3478"},
			AlternateDomain:  "turn.example.org",
		},
		Handover: Handover{Socket: "/run/turnd/handover.sock", Timeout: 5 * time.Second, After: "wait"},
		HTTP:     HTTP{Address: "0.0.0.0:9641", AdminTokenFile: "/run/secrets/turnd-admin-token", MetricsUsers: []string{"alice", "bob"}},
		Log:      Log{Level: "debug", Format: "json"},
		PIDFile:  "/run/turnd.pid",
		Fleet: Fleet{
			Redis: "rediss://turnd@redis.example.org:6380/0", PasswordFile: "/run/secrets/redis-password",
			CAFile: "/etc/turnd/redis-ca.pem", Node: "turn-1", Prefix: "prod:", Lease: 15 * time.Second,
			Timeout: 200 * time.Millisecond, OnOutage: "refuse", TotalAllocations: 50000,
			Advertise:   []string{"turn:192.0.2.1:3478?transport=udp", "turns:turn.example.org:5349"},
			Credentials: FleetCredentials{TokenFile: "/run/secrets/turnd-credentials-token", TTL: 2 * time.Hour, Nodes: 2},
		},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("full config:\n got %+v\nwant %+v", got, want)
	}
}

func TestParseValidationErrorType(t *testing.T) {
	_, err := Parse([]byte("drain: {timeout: -1s}\n"))
	var ve *ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("error %v is not a *ValidationError", err)
	}
	if !errors.Is(err, ErrInvalid) {
		t.Error("errors.Is(err, ErrInvalid) = false")
	}
	want := []Problem{
		{Path: "drain.timeout", Message: "must be >= 0 (0 means stop at once)", Line: 1},
		{Path: "auth", Message: "at least one user or secret is required"},
	}
	if !reflect.DeepEqual(ve.Problems, want) {
		t.Errorf("Problems = %+v, want %+v", ve.Problems, want)
	}
}

func TestParseDecodeErrorIsDecode(t *testing.T) {
	_, err := Parse([]byte("nope: 1\nauth: {users: {a: b}}\n"))
	if !errors.Is(err, ErrDecode) || !errors.Is(err, ErrInvalid) {
		t.Errorf("unknown key: got %v, want ErrDecode and ErrInvalid", err)
	}
	if _, err := Parse([]byte("drain: {timeout: -1s}\n")); errors.Is(err, ErrDecode) {
		t.Errorf("validation only: got %v, which is not a decode problem", err)
	}
}

func TestLoadMissingFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "absent.yaml")
	_, err := Load(path)
	if !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Load(absent) = %v, want os.ErrNotExist", err)
	}
	if !strings.Contains(err.Error(), path) {
		t.Errorf("error %q does not name %s", err, path)
	}
}
