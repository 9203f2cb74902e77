package config

import (
	"reflect"
	"testing"
	"time"
)

func TestRestartNeeded(t *testing.T) {
	tests := []struct {
		name   string
		change func(*Config)
		want   []string
	}{
		{"nothing", func(*Config) {}, nil},
		{"runtime settings only", func(c *Config) {
			c.Realm = "other"
			c.Auth.Users = map[string]string{"bob": "x"}
			c.Peers.Denied = []string{"10.0.0.0/8"}
			c.Limits.MaxLifetime = time.Minute
			c.Drain.Timeout = time.Minute
			c.Log.Level = "debug"
			c.TLS.CertFile = "new.crt"
			c.Relay.TCPAllocations = false
		}, nil},
		{"nil and empty list are the same", func(c *Config) { c.Listen.TLS = []string{} }, nil},
		{"listeners", func(c *Config) {
			c.Listen.UDP = append(c.Listen.UDP, "127.0.0.1:3479")
			c.Listen.TCP = nil
			c.Listen.TLS = []string{"127.0.0.1:5349"}
			c.Listen.UDPSockets = 2
		}, []string{"listen.udp", "listen.tcp", "listen.tls", "listen.udp_sockets"}},
		{"relay and files", func(c *Config) {
			c.Relay.Address = "127.0.0.2"
			c.Relay.ExternalAddress = "192.0.2.1"
			c.Relay.MinPort = 50000
			c.Relay.MaxPort = 50010
			c.HTTP.Address = ""
			c.HTTP.AdminTokenFile = "/run/secrets/token"
			c.PIDFile = "/run/turnd.pid"
		}, []string{"relay.address", "relay.external_address", "relay.min_port", "relay.max_port", "http.address",
			"http.admin_token_file", "pidfile"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			old, next := Embedded(), Embedded()
			tt.change(&next)
			if got := RestartNeeded(old, next); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("RestartNeeded = %q, want %q", got, tt.want)
			}
		})
	}
}
