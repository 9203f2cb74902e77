package server

import (
	"net"
	"strings"
	"testing"

	"github.com/turnd/turnd/pkg/config"
)

func TestRelayOptions(t *testing.T) {
	ip := net.ParseIP
	tests := []struct {
		name               string
		udp, tcp, tls      []string
		address, external  string
		v4, v6, ext4, ext6 net.IP
		wantErr            string // substring; "" means success
	}{
		{
			name: "first specific listen address per family",
			udp:  []string{"127.0.0.1:3478"}, tcp: []string{"127.0.0.2:3478"},
			v4: ip("127.0.0.1"),
		},
		{
			name:    "relay.address v4 wins over listen addresses",
			udp:     []string{"127.0.0.1:3478"},
			address: "10.1.2.3",
			v4:      ip("10.1.2.3"),
		},
		{
			name: "v6 listen address gives the v6 relay",
			udp:  []string{"[::1]:3478"},
			v6:   ip("::1"),
		},
		{
			name: "both families from listen, tls included",
			udp:  []string{"127.0.0.1:3478"}, tls: []string{"[2001:db8::7]:5349"},
			v4: ip("127.0.0.1"), v6: ip("2001:db8::7"),
		},
		{
			name:    "relay.address v6 with a v4 listen address: one of each",
			udp:     []string{"127.0.0.1:3478"},
			address: "2001:db8::1",
			v4:      ip("127.0.0.1"), v6: ip("2001:db8::1"),
		},
		{
			name: "wildcard listen skipped for a specific one",
			udp:  []string{"0.0.0.0:3478"}, tcp: []string{"127.0.0.1:3478"},
			v4: ip("127.0.0.1"),
		},
		{
			name:     "external v4 is advertised for v4 only",
			udp:      []string{"127.0.0.1:3478", "[::1]:3478"},
			external: "203.0.113.5",
			v4:       ip("127.0.0.1"), v6: ip("::1"), ext4: ip("203.0.113.5"),
		},
		{
			name:     "external v6 is advertised for v6 only",
			udp:      []string{"127.0.0.1:3478", "[::1]:3478"},
			external: "2001:db8::5",
			v4:       ip("127.0.0.1"), v6: ip("::1"), ext6: ip("2001:db8::5"),
		},
		{
			name:     "wildcard relay.address with external address",
			udp:      []string{"0.0.0.0:3478"},
			address:  "0.0.0.0",
			external: "198.51.100.9",
			v4:       ip("0.0.0.0"), ext4: ip("198.51.100.9"),
		},
		{
			name:     "relay.address names both families, over listen addresses of one",
			udp:      []string{"127.0.0.1:3478"},
			address:  "10.1.2.3, 2001:db8::3",
			external: "203.0.113.5,2001:db8::5",
			v4:       ip("10.1.2.3"), v6: ip("2001:db8::3"), ext4: ip("203.0.113.5"), ext6: ip("2001:db8::5"),
		},
		{
			name:     "wildcards of both families, one external address each",
			udp:      []string{"0.0.0.0:3478"},
			address:  "0.0.0.0,::",
			external: "198.51.100.9,2001:db8::9",
			v4:       ip("0.0.0.0"), v6: ip("::"), ext4: ip("198.51.100.9"), ext6: ip("2001:db8::9"),
		},
		{
			name: "wildcard listen without relay.address",
			udp:  []string{"0.0.0.0:3478"}, tcp: []string{"[::]:3478"},
			wantErr: "relay.address: required when every listen address is a wildcard",
		},
		{
			name:    "no listen address at all",
			wantErr: "relay.address: required",
		},
		{
			name:    "wildcard v4 relay.address without external",
			udp:     []string{"127.0.0.1:3478"},
			address: "0.0.0.0",
			wantErr: "relay.external_address: required when relay.address is 0.0.0.0",
		},
		{
			name:    "wildcard v6 relay.address without external",
			udp:     []string{"[::1]:3478"},
			address: "::",
			wantErr: "relay.external_address: required when relay.address is ::",
		},
		{
			name:     "wildcard v6 relay.address with only a v4 external",
			udp:      []string{"127.0.0.1:3478"},
			address:  "::",
			external: "203.0.113.5",
			wantErr:  "relay.external_address: required when relay.address is ::",
		},
		{
			name:    "relay.address not an IP",
			udp:     []string{"127.0.0.1:3478"},
			address: "relay.example",
			wantErr: `relay.address: "relay.example": not an IP address`,
		},
		{
			name:     "external address not an IP",
			udp:      []string{"127.0.0.1:3478"},
			external: "nat.example",
			wantErr:  `relay.external_address: "nat.example": not an IP address`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := config.Default()
			cfg.Listen.UDP, cfg.Listen.TCP, cfg.Listen.TLS = tt.udp, tt.tcp, tt.tls
			cfg.Relay.Address, cfg.Relay.ExternalAddress = tt.address, tt.external
			cfg.Relay.MinPort, cfg.Relay.MaxPort = 40000, 40100
			got, err := relayOptions(cfg)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("relayOptions: err = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("relayOptions: %v", err)
			}
			for _, f := range []struct {
				field     string
				got, want net.IP
			}{
				{"IPv4", got.IPv4, tt.v4}, {"IPv6", got.IPv6, tt.v6},
				{"External4", got.External4, tt.ext4}, {"External6", got.External6, tt.ext6},
			} {
				if (f.got == nil) != (f.want == nil) || !f.got.Equal(f.want) {
					t.Errorf("%s = %v, want %v", f.field, f.got, f.want)
				}
			}
			if got.MinPort != 40000 || got.MaxPort != 40100 {
				t.Errorf("ports = %d-%d, want 40000-40100", got.MinPort, got.MaxPort)
			}
		})
	}
}
