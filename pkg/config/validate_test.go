package config

import (
	"errors"
	"reflect"
	"testing"
	"time"
)

// TestValidateBoundaries covers the edges of each rule on top of the
// testdata files: values just inside must pass, just outside must fail at
// the right path.
func TestValidateBoundaries(t *testing.T) {
	tests := []struct {
		name   string
		change func(*Config)
		want   []string // paths with problems; nil means valid
	}{
		{"embedded is valid", func(*Config) {}, nil},
		{"one relay port", func(c *Config) { c.Relay.MinPort, c.Relay.MaxPort = 1, 1 }, nil},
		{"top relay port", func(c *Config) { c.Relay.MinPort, c.Relay.MaxPort = 65535, 65535 }, nil},
		{"relay port 0", func(c *Config) { c.Relay.MinPort = 0 }, []string{"relay.min_port"}},
		{"relay port 65536", func(c *Config) { c.Relay.MaxPort = 65536 }, []string{"relay.max_port"}},
		{"udp_sockets 1024", func(c *Config) { c.Listen.UDPSockets = 1024 }, nil},
		{"udp_sockets 1025", func(c *Config) { c.Listen.UDPSockets = 1025 }, []string{"listen.udp_sockets"}},
		{"drain timeout 0", func(c *Config) { c.Drain.Timeout = 0 }, nil},
		{"drain delay -1ns", func(c *Config) { c.Drain.Delay = -1 }, []string{"drain.delay"}},
		{"handover timeout 0", func(c *Config) { c.Handover.Timeout = 0 }, []string{"handover.timeout"}},
		{"handover after stay", func(c *Config) { c.Handover.After = "stay" }, []string{"handover.after"}},
		{"offload xdp", func(c *Config) { c.Relay.Offload = "xdp" }, []string{"relay.offload"}},
		{"offload interface path", func(c *Config) { c.Relay.OffloadInterfaces = []string{"../eth0"} }, []string{"relay.offload_interfaces[0]"}},
		{"handover socket relative", func(c *Config) { c.Handover.Socket = "turnd.sock" }, []string{"handover.socket"}},
		{"handover socket absolute", func(c *Config) { c.Handover.Socket = "/run/turnd/handover.sock" }, nil},
		{"lifetime 1ns", func(c *Config) { c.Limits.ChannelLifetime = time.Nanosecond }, nil},
		{"multi-byte separator", func(c *Config) { c.Auth.RESTSeparator = "·" }, nil},
		{"empty realm", func(c *Config) { c.Realm = " " }, []string{"realm"}},
		{"zoned listener", func(c *Config) { c.Listen.UDP = []string{"[fe80::1%lo]:3478"} }, nil},
		{"same address on udp and tcp", func(c *Config) { c.Listen.TCP = c.Listen.UDP }, nil},
		{"port 0 twice", func(c *Config) { c.Listen.UDP = []string{"127.0.0.1:0", "127.0.0.1:0"} }, nil},
		{"only secrets", func(c *Config) { c.Auth.Users, c.Auth.Secrets = nil, []string{"s"} }, nil},
		{"unspecified relay with external", func(c *Config) {
			c.Relay.Address, c.Relay.ExternalAddress = "0.0.0.0", "192.0.2.1"
		}, nil},
		{"unspecified relay without external", func(c *Config) { c.Relay.Address = "::" }, []string{"relay.external_address"}},
		{"bad relay address is reported once", func(c *Config) { c.Relay.Address = "nope" }, []string{"relay.address"}},
		{"http disabled", func(c *Config) { c.HTTP.Address = "" }, nil},
		{"http without port", func(c *Config) { c.HTTP.Address = "127.0.0.1" }, []string{"http.address"}},
		{"peer entries", func(c *Config) {
			c.Peers.Allowed = []string{"10.0.0.0/8", "10.0.0.1/8"}
			c.Peers.Denied = []string{"x", "::1"}
		}, []string{"peers.allowed[1]", "peers.denied[0]"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := Embedded()
			tt.change(&c)
			err := c.Validate()
			var got []string
			var ve *ValidationError
			if errors.As(err, &ve) {
				for _, p := range ve.Problems {
					got = append(got, p.Path)
				}
			} else if err != nil {
				t.Fatalf("Validate returned %T, want *ValidationError: %v", err, err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("problems at %q, want %q (error: %v)", got, tt.want, err)
			}
		})
	}
}
