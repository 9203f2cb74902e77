package server

import (
	"fmt"
	"net"

	"github.com/turnd/turnd/pkg/config"
	"github.com/turnd/turnd/pkg/relay"
)

// relayOptions works out where relay sockets bind and what they advertise,
// per IP family: relay.address (and relay.external_address), which may name
// one address of each family, for its family,
// otherwise the first specific listen address of each family. A server that
// listens only on a wildcard must be told its relay address: a client
// cannot be sent 0.0.0.0 in XOR-RELAYED-ADDRESS.
func relayOptions(cfg config.Config) (relay.Options, error) {
	opts := relay.Options{MinPort: cfg.Relay.MinPort, MaxPort: cfg.Relay.MaxPort}
	set := func(ip net.IP, external bool) {
		v4 := ip.To4() != nil
		switch {
		case external && v4:
			opts.External4 = ip
		case external:
			opts.External6 = ip
		case v4 && opts.IPv4 == nil:
			opts.IPv4 = ip.To4()
		case !v4 && opts.IPv6 == nil:
			opts.IPv6 = ip
		}
	}
	for _, s := range config.SplitAddresses(cfg.Relay.Address) {
		ip := net.ParseIP(s)
		if ip == nil {
			return opts, fmt.Errorf("relay.address: %q is not an IP address", s)
		}
		set(ip, false)
	}
	var listens []string
	listens = append(listens, cfg.Listen.UDP...)
	listens = append(listens, cfg.Listen.TCP...)
	listens = append(listens, cfg.Listen.TLS...)
	listens = append(listens, cfg.Listen.TCPTLS...)
	for _, l := range listens {
		host, _, err := net.SplitHostPort(l)
		if err != nil {
			continue // config validation reports it
		}
		if ip := net.ParseIP(host); ip != nil && !ip.IsUnspecified() {
			set(ip, false)
		}
	}
	for _, s := range config.SplitAddresses(cfg.Relay.ExternalAddress) {
		ip := net.ParseIP(s)
		if ip == nil {
			return opts, fmt.Errorf("relay.external_address: %q is not an IP address", s)
		}
		set(ip, true)
	}
	if opts.IPv4 == nil && opts.IPv6 == nil {
		return opts, fmt.Errorf("relay.address: required when every listen address is a wildcard")
	}
	// A wildcard relay bind needs a concrete address to advertise.
	for _, p := range []struct{ bind, ext net.IP }{{opts.IPv4, opts.External4}, {opts.IPv6, opts.External6}} {
		if p.bind != nil && p.bind.IsUnspecified() && p.ext == nil {
			return opts, fmt.Errorf("relay.external_address: required when relay.address is %s", p.bind)
		}
	}
	return opts, nil
}
