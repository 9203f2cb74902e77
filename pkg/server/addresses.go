package server

import (
	"fmt"
	"net"
	"net/netip"

	"github.com/turnd/turnd/internal/relay"
	"github.com/turnd/turnd/pkg/config"
)

// relayOptions turns config's per-family relay addresses (config.ResolveRelay
// holds the rule) into the relay's options.
func relayOptions(cfg config.Config) (relay.Options, error) {
	opts := relay.Options{MinPort: cfg.Relay.MinPort, MaxPort: cfg.Relay.MaxPort}
	a, err := cfg.ResolveRelay()
	if err != nil {
		return opts, fmt.Errorf("resolve relay addresses: %w", err)
	}
	opts.IPv4, opts.IPv6 = ipOrNil(a.Bind4), ipOrNil(a.Bind6)
	opts.External4, opts.External6 = ipOrNil(a.External4), ipOrNil(a.External6)
	return opts, nil
}

// ipOrNil is a as a net.IP, nil when a is the zero Addr (the relay's "none").
func ipOrNil(a netip.Addr) net.IP {
	if !a.IsValid() {
		return nil
	}
	return net.IP(a.AsSlice())
}
