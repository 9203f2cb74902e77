package config

import "testing"

func TestEffectiveRelayAddress(t *testing.T) {
	tests := []struct {
		name   string
		change func(*Config)
		relay  string
	}{
		{"defaults", func(*Config) {}, "127.0.0.1"},
		{"relay.address wins", func(c *Config) { c.Relay.Address = "10.0.0.5" }, "10.0.0.5"},
		{"external_address", func(c *Config) { c.Relay.ExternalAddress = "192.0.2.1" }, "127.0.0.1"},
		{"IPv6 listener", func(c *Config) { c.Listen.UDP = []string{"[::1]:3478"} }, "::1"},
		{"TCP when no UDP", func(c *Config) {
			c.Listen.UDP = nil
			c.Listen.TCP = []string{"127.0.0.9:3478"}
		}, "127.0.0.9"},
		{"skips a malformed first address", func(c *Config) { c.Listen.UDP = []string{"x", "127.0.0.3:1"} }, "127.0.0.3"},
		{"no listeners", func(c *Config) {
			c.Listen.UDP, c.Listen.TCP = nil, nil
		}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := Default()
			tt.change(&c)
			if got := c.EffectiveRelayAddress(); got != tt.relay {
				t.Errorf("EffectiveRelayAddress() = %q, want %q", got, tt.relay)
			}
		})
	}
}
