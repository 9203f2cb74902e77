package config

import "slices"

// RestartNeeded returns the YAML paths whose values differ between old and
// next but cannot change while turnd runs, in file order, so a reload can log
// that they need a restart. It returns nil when a reload can apply next whole.
//
// These are the sockets and files turnd sets up once: listeners (changing a
// SO_REUSEPORT group would re-hash live UDP flows and break their
// allocations), relay addresses and ports, the HTTP listener and the pidfile.
func RestartNeeded(old, next Config) []string {
	var paths []string
	note := func(path string, changed bool) {
		if changed {
			paths = append(paths, path)
		}
	}
	note("listen.udp", !slices.Equal(old.Listen.UDP, next.Listen.UDP))
	note("listen.tcp", !slices.Equal(old.Listen.TCP, next.Listen.TCP))
	note("listen.tls", !slices.Equal(old.Listen.TLS, next.Listen.TLS))
	note("listen.tcp_tls", !slices.Equal(old.Listen.TCPTLS, next.Listen.TCPTLS))
	note("listen.proxy_protocol.listeners", !slices.Equal(old.Listen.ProxyProtocol.Listeners, next.Listen.ProxyProtocol.Listeners))
	note("listen.proxy_protocol.trusted", !slices.Equal(old.Listen.ProxyProtocol.Trusted, next.Listen.ProxyProtocol.Trusted))
	note("listen.udp_sockets", old.Listen.UDPSockets != next.Listen.UDPSockets)
	note("relay.address", old.Relay.Address != next.Relay.Address)
	note("relay.external_address", old.Relay.ExternalAddress != next.Relay.ExternalAddress)
	note("relay.min_port", old.Relay.MinPort != next.Relay.MinPort)
	note("relay.max_port", old.Relay.MaxPort != next.Relay.MaxPort)
	note("http.address", old.HTTP.Address != next.HTTP.Address)
	note("http.admin_token_file", old.HTTP.AdminTokenFile != next.HTTP.AdminTokenFile)
	note("pidfile", old.PIDFile != next.PIDFile)
	return paths
}
