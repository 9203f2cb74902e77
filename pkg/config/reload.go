package config

import (
	"slices"
	"time"
)

// Reload returns what a reload applies when next replaces running: next with
// every setting turnd sets up once kept at its running value, and the YAML
// paths of those that differ, in file order, so the reload can log that they
// need a restart. restartNeeded is nil when next applies whole.
//
// The settings set up once are sockets and their options (listeners,
// SO_REUSEPORT groups whose change would re-hash live UDP flows and break
// their allocations, relay addresses and ports, the HTTP listener), the
// pidfile, and what the handlers and the allocation table are built with
// (the realm, permission and channel lifetimes).
func Reload(running, next Config) (apply Config, restartNeeded []string) {
	apply = next
	for _, s := range setOnce() {
		if s.changed(&running, &next) {
			restartNeeded = append(restartNeeded, s.path)
		}
		s.keep(&apply, &running)
	}
	return apply, restartNeeded
}

// onceSetting is a setting a reload cannot change.
type onceSetting struct {
	path    string
	changed func(a, b *Config) bool
	keep    func(dst, src *Config)
}

// setOnce lists the settings a reload keeps, in file order.
func setOnce() []onceSetting {
	return []onceSetting{
		value("realm", func(c *Config) *string { return &c.Realm }),
		list("listen.udp", func(c *Config) *[]string { return &c.Listen.UDP }),
		list("listen.tcp", func(c *Config) *[]string { return &c.Listen.TCP }),
		list("listen.tls", func(c *Config) *[]string { return &c.Listen.TLS }),
		list("listen.tcp_tls", func(c *Config) *[]string { return &c.Listen.TCPTLS }),
		list("listen.proxy_protocol.listeners", func(c *Config) *[]string { return &c.Listen.ProxyProtocol.Listeners }),
		list("listen.proxy_protocol.trusted", func(c *Config) *[]string { return &c.Listen.ProxyProtocol.Trusted }),
		value("listen.udp_sockets", func(c *Config) *int { return &c.Listen.UDPSockets }),
		value("listen.socket_buffer", func(c *Config) *int { return &c.Listen.SocketBuffer }),
		value("relay.address", func(c *Config) *string { return &c.Relay.Address }),
		value("relay.external_address", func(c *Config) *string { return &c.Relay.ExternalAddress }),
		value("relay.min_port", func(c *Config) *int { return &c.Relay.MinPort }),
		value("relay.max_port", func(c *Config) *int { return &c.Relay.MaxPort }),
		value("relay.offload", func(c *Config) *string { return &c.Relay.Offload }),
		list("relay.offload_interfaces", func(c *Config) *[]string { return &c.Relay.OffloadInterfaces }),
		value("limits.permission_lifetime", func(c *Config) *time.Duration { return &c.Limits.PermissionLifetime }),
		value("limits.channel_lifetime", func(c *Config) *time.Duration { return &c.Limits.ChannelLifetime }),
		value("handover.socket", func(c *Config) *string { return &c.Handover.Socket }),
		value("http.address", func(c *Config) *string { return &c.HTTP.Address }),
		value("http.admin_token_file", func(c *Config) *string { return &c.HTTP.AdminTokenFile }),
		list("http.metrics_users", func(c *Config) *[]string { return &c.HTTP.MetricsUsers }),
		value("pidfile", func(c *Config) *string { return &c.PIDFile }),
		// A reload cannot move a node to another fleet, nor rename it.
		value("fleet.redis", func(c *Config) *string { return &c.Fleet.Redis }),
		value("fleet.password_file", func(c *Config) *string { return &c.Fleet.PasswordFile }),
		value("fleet.ca_file", func(c *Config) *string { return &c.Fleet.CAFile }),
		value("fleet.node", func(c *Config) *string { return &c.Fleet.Node }),
		value("fleet.prefix", func(c *Config) *string { return &c.Fleet.Prefix }),
		value("fleet.lease", func(c *Config) *time.Duration { return &c.Fleet.Lease }),
		value("fleet.timeout", func(c *Config) *time.Duration { return &c.Fleet.Timeout }),
		list("fleet.advertise", func(c *Config) *[]string { return &c.Fleet.Advertise }),
		value("fleet.credentials.token_file", func(c *Config) *string { return &c.Fleet.Credentials.TokenFile }),
	}
}

func value[T comparable](path string, field func(*Config) *T) onceSetting {
	return onceSetting{
		path:    path,
		changed: func(a, b *Config) bool { return *field(a) != *field(b) },
		keep:    func(dst, src *Config) { *field(dst) = *field(src) },
	}
}

// list treats a nil and an empty list as the same setting.
func list(path string, field func(*Config) *[]string) onceSetting {
	return onceSetting{
		path:    path,
		changed: func(a, b *Config) bool { return !slices.Equal(*field(a), *field(b)) },
		keep:    func(dst, src *Config) { *field(dst) = *field(src) },
	}
}
