package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCoturnFileGetsAHint(t *testing.T) {
	path := filepath.Join(t.TempDir(), "turnserver.conf")
	conf := "# coturn\nlistening-port=3478\nno-dtls\nno-tls\nrealm=example.org\nuser=alice:secret\nlt-cred-mech\n"
	if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Load(path)
	if !errors.Is(err, ErrCoturnFile) {
		t.Fatalf("Load(coturn file) = %v, want ErrCoturnFile", err)
	}
	for _, want := range []string{"this looks like a coturn turnserver.conf", "turnd import-coturn " + path} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q: %v", want, err)
		}
	}
}

func TestLooksLikeCoturn(t *testing.T) {
	tests := []struct {
		text string
		want bool
	}{
		{"no-dtls\nno-tls\n", true},
		{"listening-port=3478\n", true},
		{"realm example.org\nmin-port 49152\n", true},
		{"# comment\n\nlistening-ip=::1\n", true},
		{"realm: example.org\n", false},
		{"listen:\n  udp: [\"127.0.0.1:3478\"]\n", false},
		{"hello\n", false},
		{"", false},
		{"no-dtls\nrealm: x\n", false},
	}
	for _, tt := range tests {
		if got := looksLikeCoturn([]byte(tt.text)); got != tt.want {
			t.Errorf("looksLikeCoturn(%q) = %v, want %v", tt.text, got, tt.want)
		}
	}
}

// TestBadTurndFileGetsNoCoturnHint: the hint must not hide a turnd file's
// own problems.
func TestBadTurndFileGetsNoCoturnHint(t *testing.T) {
	_, err := Load("testdata/one-pass.bad.yaml")
	if err == nil || errors.Is(err, ErrCoturnFile) {
		t.Fatalf("Load = %v, want the file's own problems", err)
	}
}
