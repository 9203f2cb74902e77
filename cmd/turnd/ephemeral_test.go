package main

import (
	"errors"
	"strings"
	"testing"

	"github.com/turnd/turnd/pkg/config"
)

func TestEphemeralOverlap(t *testing.T) {
	rangeOf := func(s string) func() ([]byte, error) { return func() ([]byte, error) { return []byte(s), nil } }
	tests := []struct {
		name     string
		min, max int
		read     func() ([]byte, error)
		want     []string // empty: no warning
	}{
		{"defaults on a usual kernel", 49152, 65535, rangeOf("32768\t60999\n"), []string{
			"relay ports 49152-65535 overlap the kernel's ephemeral port range 32768-60999",
			"relay.min_port: 61000", `sysctl net.ipv4.ip_local_port_range="32768 49151"`}},
		{"above the range", 61000, 65535, rangeOf("32768\t60999\n"), nil},
		{"below the range", 20000, 30000, rangeOf("32768 60999"), nil},
		{"range starts below", 30000, 40000, rangeOf("32768 60999"), []string{
			"relay ports 30000-40000", `sysctl net.ipv4.ip_local_port_range="40001 60999"`}},
		{"unreadable", 49152, 65535, func() ([]byte, error) { return nil, errors.New("no /proc") }, nil},
		{"garbage", 49152, 65535, rangeOf("x"), nil},
	}
	for _, tt := range tests {
		got := ephemeralOverlap(config.Relay{MinPort: tt.min, MaxPort: tt.max}, tt.read)
		if len(tt.want) == 0 && got != "" {
			t.Errorf("%s: warned %q", tt.name, got)
		}
		for _, w := range tt.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: %q lacks %q", tt.name, got, w)
			}
		}
	}
}

// TestEmbeddedConfigOutsideEphemeralRange: the demo config `go run
// ./cmd/turnd` starts with gives a newcomer no warning on a kernel with the
// usual range, while the defaults (which operators set ranges from) do.
func TestEmbeddedConfigOutsideEphemeralRange(t *testing.T) {
	usual := func() ([]byte, error) { return []byte("32768\t60999\n"), nil }
	if w := ephemeralOverlap(config.Embedded().Relay, usual); w != "" {
		t.Errorf("the embedded config warns: %s", w)
	}
	if w := ephemeralOverlap(config.Default().Relay, usual); w == "" {
		t.Error("the defaults overlap the usual range but no warning")
	}
}
