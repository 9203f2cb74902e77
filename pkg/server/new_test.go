package server_test

import (
	"net"
	"path/filepath"
	"strings"
	"testing"

	"github.com/turnd/turnd/pkg/config"
	"github.com/turnd/turnd/pkg/server"
)

// TestNewFails: a server that cannot start says why and leaves nothing
// bound: the UDP group it bound before the failing TCP address is released.
func TestNewFails(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	tests := []struct {
		name      string
		configure func(c *config.Config, udp string)
		wantErr   string
	}{
		{"tcp address in use", func(c *config.Config, udp string) {
			c.Listen.UDP = []string{udp}
			c.Listen.TCP = []string{busy.Addr().String()}
		}, "listen tcp " + busy.Addr().String()},
		{"missing certificate", func(c *config.Config, udp string) {
			c.Listen.UDP = []string{udp}
			c.Listen.TLS = []string{"127.0.0.1:0"}
			c.TLS.CertFile = filepath.Join(t.TempDir(), "missing.pem")
			c.TLS.KeyFile = c.TLS.CertFile
		}, "load tls certificate"},
		{"wildcard listen without relay.address", func(c *config.Config, udp string) {
			c.Listen.UDP = []string{udp}
			c.Listen.TCP = []string{"0.0.0.0:0"}
		}, ""}, // the UDP address is specific: this one starts
		{"only wildcards", func(c *config.Config, _ string) {
			c.Listen.UDP = []string{"0.0.0.0:0"}
			c.Listen.TCP = nil
		}, "relay.address: required"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			guard(t)
			udp := freeUDPAddr(t)
			cfg := testConfig()
			tt.configure(&cfg, udp)
			s, err := server.New(server.Options{Config: cfg})
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("new: %v", err)
				}
				if err := s.Close(); err != nil {
					t.Fatalf("close: %v", err)
				}
			} else if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				if s != nil {
					s.Close()
				}
				t.Fatalf("new: err = %v, want one containing %q", err, tt.wantErr)
			}
			// turnd's sockets use SO_REUSEPORT, a plain socket does not:
			// this bind fails while any of them is left open.
			pc, err := net.ListenPacket("udp", udp)
			if err != nil {
				t.Fatalf("UDP address still bound: %v", err)
			}
			pc.Close()
		})
	}
}

// freeUDPAddr returns a loopback UDP address that was free a moment ago.
func freeUDPAddr(t *testing.T) string {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	return pc.LocalAddr().String()
}
