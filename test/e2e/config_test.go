package e2e

import (
	"crypto/tls"
	"os"
	"path/filepath"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/turnd/turnd/internal/testcert"
	"github.com/turnd/turnd/pkg/config"
)

// testConfig is a loopback config on kernel-chosen ports with the demo user
// and loopback peers allowed (the echo peer lives on 127.0.0.1).
func testConfig() config.Config {
	cfg := config.Default()
	cfg.Listen.UDP = []string{"127.0.0.1:0"}
	cfg.Listen.TCP = []string{"127.0.0.1:0"}
	cfg.HTTP.Address = "127.0.0.1:0"
	// Relay ports above the kernel's ephemeral range (32768-60999): on one
	// machine the clients' own sockets would otherwise take relay ports,
	// such as the P+1 an EVEN-PORT reservation promised.
	cfg.Relay.MinPort, cfg.Relay.MaxPort = 61000, 65535
	cfg.Auth.Users = map[string]string{"demo": "demo"}
	cfg.Peers.AllowLoopback = true
	cfg.Log = config.Log{Level: "debug", Format: "json"}
	return cfg
}

// start runs turnd on cfg.
func start(t *testing.T, cfg config.Config) *turnd {
	t.Helper()
	return startTurndFile(t, writeConfig(t, cfg))
}

// writeConfig writes cfg as YAML to a temporary file.
func writeConfig(t *testing.T, cfg config.Config) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "turnd.yaml")
	rewriteConfig(t, path, cfg)
	return path
}

func rewriteConfig(t *testing.T, path string, cfg config.Config) {
	t.Helper()
	b, err := yaml.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// selfSigned writes a self-signed certificate for 127.0.0.1 and returns the
// certificate and key paths.
func selfSigned(t *testing.T) (string, string) {
	t.Helper()
	return testcert.New(t, 1).WriteFiles(t, t.TempDir())
}

// withTLS adds a TLS listener with a fresh certificate to cfg and returns
// a client configuration that trusts it.
func withTLS(t *testing.T, cfg *config.Config) *tls.Config {
	t.Helper()
	c := testcert.New(t, 1)
	cfg.Listen.TLS = []string{"127.0.0.1:0"}
	cfg.TLS.CertFile, cfg.TLS.KeyFile = c.WriteFiles(t, t.TempDir())
	return c.ClientConfig()
}
