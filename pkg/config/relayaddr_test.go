package config

import (
	"net/netip"
	"strings"
	"testing"
)

func TestResolveRelay(t *testing.T) {
	ip := netip.MustParseAddr
	tests := []struct {
		name                     string
		change                   func(*Config)
		bind4, bind6, ext4, ext6 netip.Addr
		wantErr                  string // substring; "" means success
	}{
		{name: "defaults", change: func(*Config) {}, bind4: ip("127.0.0.1")},
		{name: "relay.address wins", change: func(c *Config) { c.Relay.Address = "10.0.0.5" }, bind4: ip("10.0.0.5")},
		{name: "external_address", change: func(c *Config) { c.Relay.ExternalAddress = "192.0.2.1" }, bind4: ip("127.0.0.1"), ext4: ip("192.0.2.1")},
		{name: "IPv6 listener", change: func(c *Config) { c.Listen.UDP, c.Listen.TCP = []string{"[::1]:3478"}, nil }, bind6: ip("::1")},
		{name: "TCP when no UDP", change: func(c *Config) {
			c.Listen.UDP, c.Listen.TCP = nil, []string{"127.0.0.9:3478"}
		}, bind4: ip("127.0.0.9")},
		{name: "skips a malformed first address", change: func(c *Config) { c.Listen.UDP = []string{"x", "127.0.0.3:1"} }, bind4: ip("127.0.0.3")},
		{name: "skips a wildcard for a specific address of its family", change: func(c *Config) {
			c.Listen.UDP = []string{"0.0.0.0:3478", "192.0.2.5:3478"}
		}, bind4: ip("192.0.2.5")},
		{name: "first specific address of each family", change: func(c *Config) {
			c.Listen.UDP, c.Listen.TLS = []string{"[::]:3478", "127.0.0.1:3478"}, []string{"[2001:db8::7]:5349"}
		}, bind4: ip("127.0.0.1"), bind6: ip("2001:db8::7")},
		{name: "relay.address of one family, listen address of the other", change: func(c *Config) {
			c.Relay.Address = "2001:db8::1"
		}, bind4: ip("127.0.0.1"), bind6: ip("2001:db8::1")},
		{name: "wildcards with one external address each", change: func(c *Config) {
			c.Relay.Address, c.Relay.ExternalAddress = "0.0.0.0,::", "198.51.100.9,2001:db8::9"
		}, bind4: ip("0.0.0.0"), bind6: ip("::"), ext4: ip("198.51.100.9"), ext6: ip("2001:db8::9")},
		{name: "every listen address a wildcard", change: func(c *Config) {
			c.Listen.UDP, c.Listen.TCP = []string{"0.0.0.0:3478"}, []string{"[::]:3478"}
			c.Relay.ExternalAddress = "192.0.2.1"
		}, wantErr: "relay.address: required when every listen address is a wildcard"},
		{name: "no listeners", change: func(c *Config) {
			c.Listen.UDP, c.Listen.TCP = nil, nil
		}, wantErr: "relay.address: required when there is no listen address"},
		{name: "wildcard relay.address without its family's external", change: func(c *Config) {
			c.Relay.Address, c.Relay.ExternalAddress = "::", "203.0.113.5"
		}, wantErr: "relay.external_address: required when relay.address is ::"},
		{name: "relay.address not an IP", change: func(c *Config) { c.Relay.Address = "relay.example" },
			wantErr: `relay.address: "relay.example": not an IP address`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := Default()
			tt.change(&c)
			got, err := c.ResolveRelay()
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ResolveRelay: err = %v, want one containing %q", err, tt.wantErr)
				}
				if verr := c.Validate(); verr == nil || !strings.Contains(verr.Error(), tt.wantErr) {
					t.Errorf("Validate = %v, want the same problem as ResolveRelay", verr)
				}
				return
			}
			if err != nil {
				t.Fatalf("ResolveRelay: %v", err)
			}
			want := RelayAddresses{Bind4: tt.bind4, Bind6: tt.bind6, External4: tt.ext4, External6: tt.ext6}
			if got != want {
				t.Errorf("ResolveRelay = %+v, want %+v", got, want)
			}
			if err := c.Validate(); err != nil && strings.Contains(err.Error(), "relay.") {
				t.Errorf("Validate: %v, want no relay problem as ResolveRelay found none", err)
			}
		})
	}
}
