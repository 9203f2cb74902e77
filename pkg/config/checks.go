package config

import (
	"fmt"
	"maps"
	"net/netip"
	"path/filepath"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/turnd/turnd/pkg/peerfilter"
)

// maxUDPSockets bounds listen.udp_sockets; more sockets than any machine has
// CPUs only waste file descriptors and memory.
const maxUDPSockets = 1024

func (c Config) checkListen(v *validator) {
	lists := []struct {
		path  string
		addrs []string
	}{{"listen.udp", c.Listen.UDP}, {"listen.tcp", c.Listen.TCP}, {"listen.tls", c.Listen.TLS}, {"listen.tcp_tls", c.Listen.TCPTLS}}
	// TCP, TLS and TCP+TLS listeners share the TCP port space; UDP has its own.
	// Port 0 picks a free port, so it never collides.
	seen := map[string]map[netip.AddrPort]string{"udp": {}, "tcp": {}}
	for _, l := range lists {
		space := "tcp"
		if l.path == "listen.udp" {
			space = "udp"
		}
		for i, s := range l.addrs {
			path := index(l.path, i)
			ap, msg := parseHostPort(s, 0)
			if msg != "" {
				v.add(path, "%s", msg)
				continue
			}
			ap = netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
			if ap.Port() == 0 {
				continue
			}
			if first, dup := seen[space][ap]; dup {
				v.add(path, "%q is already used by %s", s, first)
				continue
			}
			seen[space][ap] = path
		}
	}
	if len(c.Listen.UDP)+len(c.Listen.TCP)+len(c.Listen.TLS)+len(c.Listen.TCPTLS) == 0 {
		v.add("listen", "at least one udp, tcp, tls or tcp_tls address is required")
	}
	if c.Listen.UDPSockets < 0 || c.Listen.UDPSockets > maxUDPSockets {
		v.add("listen.udp_sockets", "must be between 0 (one per CPU) and %d", maxUDPSockets)
	}
	if c.Listen.SocketBuffer < 0 {
		v.add("listen.socket_buffer", "must be >= 0 (0 keeps the kernel default)")
	}
}

func (c Config) checkProxyProtocol(v *validator) {
	p := c.Listen.ProxyProtocol
	streams := slices.Concat(c.Listen.TCP, c.Listen.TLS, c.Listen.TCPTLS)
	for i, s := range p.Listeners {
		if !slices.Contains(streams, s) {
			v.add(index("listen.proxy_protocol.listeners", i), "%q is not an address of listen.tcp, listen.tls or listen.tcp_tls", s)
		}
	}
	for i, s := range p.Trusted {
		v.addIf(index("listen.proxy_protocol.trusted", i), checkPrefix(s))
	}
	switch {
	case len(p.Listeners) > 0 && len(p.Trusted) == 0:
		v.add("listen.proxy_protocol.trusted", "required when listen.proxy_protocol.listeners is set")
	case len(p.Trusted) > 0 && len(p.Listeners) == 0:
		v.add("listen.proxy_protocol.listeners", "required when listen.proxy_protocol.trusted is set")
	}
}

func (c Config) checkTLS(v *validator) {
	cert, key := c.TLS.CertFile != "", c.TLS.KeyFile != ""
	switch {
	case c.ServesTLS():
		if !cert {
			v.add("tls.cert_file", "required when listen.tls or listen.tcp_tls is set")
		}
		if !key {
			v.add("tls.key_file", "required when listen.tls or listen.tcp_tls is set")
		}
	case cert && !key:
		v.add("tls.key_file", "required when tls.cert_file is set")
	case key && !cert:
		v.add("tls.cert_file", "required when tls.key_file is set")
	}
}

func (c Config) checkRelay(v *validator) {
	r := c.Relay
	c.resolveRelay(v)
	portOK := true
	for _, p := range []struct {
		path string
		port int
	}{{"relay.min_port", r.MinPort}, {"relay.max_port", r.MaxPort}} {
		if p.port < 1 || p.port > 65535 {
			v.add(p.path, "must be between 1 and 65535")
			portOK = false
		}
	}
	if portOK && r.MinPort > r.MaxPort {
		v.add("relay.min_port", "must be <= relay.max_port")
	}
}

func (c Config) checkAuth(v *validator) {
	a := c.Auth
	if len(a.Users) == 0 && len(a.Secrets) == 0 {
		v.add("auth", "at least one user or secret is required")
	}
	// Map order is random; sort so the report is stable.
	for _, name := range slices.Sorted(maps.Keys(a.Users)) {
		switch {
		case name == "":
			v.add("auth.users", "user name must not be empty")
		case a.Users[name] == "":
			v.add("auth.users."+name, "password must not be empty")
		}
	}
	for i, s := range a.Secrets {
		if s == "" {
			v.add(index("auth.secrets", i), "must not be empty")
		}
	}
	for i, u := range a.RevokedUsers {
		if u == "" {
			v.add(index("auth.revoked_users", i), "must not be empty")
		}
	}
	if utf8.RuneCountInString(a.RESTSeparator) != 1 {
		v.add("auth.rest_separator", "must be exactly one character, got %q", a.RESTSeparator)
	}
	if a.MaxRESTValidity < 0 {
		v.add("auth.max_rest_validity", "must be >= 0 (0 means no cap)")
	}
}

func (c Config) checkPeers(v *validator) {
	for _, l := range []struct {
		path    string
		entries []string
	}{{"peers.allowed", c.Peers.Allowed}, {"peers.denied", c.Peers.Denied}} {
		for i, s := range l.entries {
			if _, err := peerfilter.ParseEntry(s); err != nil {
				v.add(index(l.path, i), "%s", err.Error())
			}
		}
	}
}

func (c Config) checkLimits(v *validator) {
	l := c.Limits
	if l.TotalAllocations < 0 {
		v.add("limits.total_allocations", "must be >= 0 (0 means unlimited)")
	}
	if l.UserAllocations < 0 {
		v.add("limits.user_allocations", "must be >= 0 (0 means unlimited)")
	}
	if l.MaxLifetime <= 0 {
		v.add("limits.max_lifetime", "must be > 0")
	}
	if l.PermissionLifetime <= 0 {
		v.add("limits.permission_lifetime", "must be > 0")
	}
	if l.ChannelLifetime <= 0 {
		v.add("limits.channel_lifetime", "must be > 0")
	}
	for path, n := range map[string]int{
		"limits.ip_allocations":             l.IPAllocations,
		"limits.prefix_allocations":         l.PrefixAllocations,
		"limits.permissions_per_allocation": l.PermissionsPerAllocation,
		"limits.channels_per_allocation":    l.ChannelsPerAllocation,
		"limits.unauthenticated_rate":       l.UnauthenticatedRate,
		"limits.user_allocate_rate":         l.UserAllocateRate,
		"limits.connections_per_ip":         l.ConnectionsPerIP,
		"limits.connections_per_prefix":     l.ConnectionsPerPrefix,
		"limits.connections":                l.Connections,
	} {
		if n < 0 {
			v.add(path, "must be >= 0 (0 means unlimited)")
		}
	}
	for path, n := range map[string]int64{"limits.max_bps": l.MaxBPS, "limits.total_bps": l.TotalBPS,
		"limits.user_total_bps": l.UserTotalBPS} {
		if n < 0 {
			v.add(path, "must be >= 0 (0 means unlimited)")
		}
	}
	for _, m := range []struct {
		path  string
		rates map[string]int64
	}{{"limits.user_max_bps.", l.UserMaxBPS}, {"limits.user_total_bps_overrides.", l.UserTotalBPSOverrides}} {
		for _, user := range slices.Sorted(maps.Keys(m.rates)) {
			if m.rates[user] < 0 {
				v.add(m.path+user, "must be >= 0 (0 means unlimited)")
			}
		}
	}
	if l.IdleConnectionTimeout <= 0 {
		v.add("limits.idle_connection_timeout", "must be > 0")
	}
}

func (c Config) checkOffload(v *validator) {
	switch c.Relay.Offload {
	case "off", "tc", "auto":
	default:
		v.add("relay.offload", "%q: must be off, tc or auto", c.Relay.Offload)
	}
	for i, name := range c.Relay.OffloadInterfaces {
		if name == "" || len(name) > 15 || strings.ContainsAny(name, "/ \t\n") {
			v.add(fmt.Sprintf("relay.offload_interfaces[%d]", i), "%q: not an interface name", name)
		}
	}
}

func (c Config) checkHandover(v *validator) {
	if c.Handover.Timeout <= 0 {
		v.add("handover.timeout", "must be positive")
	}
	if a := c.Handover.After; a != "exit" && a != "wait" {
		v.add("handover.after", "%q: must be exit or wait", a)
	}
	if s := c.Handover.Socket; s != "" && !filepath.IsAbs(s) {
		v.add("handover.socket", "%q: must be an absolute path", s)
	}
}

func (c Config) checkDrain(v *validator) {
	if c.Drain.Timeout < 0 {
		v.add("drain.timeout", "must be >= 0 (0 means stop at once)")
	}
	if c.Drain.Delay < 0 {
		v.add("drain.delay", "must be >= 0")
	}
	for i, s := range c.Drain.AlternateServers {
		v.addIf(index("drain.alternate_servers", i), checkServer(s))
	}
	if d := c.Drain.AlternateDomain; d != "" {
		switch {
		case !isDNSName(d):
			v.add("drain.alternate_domain", "%q is not a DNS name", d)
		case len(c.Listen.TLS) == 0:
			v.add("drain.alternate_domain", "needs listen.tls: it is only sent over TLS")
		case len(c.Drain.AlternateServers) == 0:
			v.add("drain.alternate_domain", "needs drain.alternate_servers")
		}
	}
}

func (c Config) checkHTTP(v *validator) {
	if c.HTTP.Address != "" {
		v.addIf("http.address", checkHostPort(c.HTTP.Address, 0))
	}
	seen := make(map[string]bool, len(c.HTTP.MetricsUsers))
	for i, u := range c.HTTP.MetricsUsers {
		path := fmt.Sprintf("http.metrics_users[%d]", i)
		switch {
		case u == "":
			v.add(path, "must not be empty")
		case u == OtherUsers:
			v.add(path, "%q is the label of every user not listed", OtherUsers)
		case seen[u]:
			v.add(path, "%q is listed twice", u)
		}
		seen[u] = true
	}
}

// OtherUsers is the user label of the traffic of users not in http.metrics_users.
const OtherUsers = "other"

func (c Config) checkLog(v *validator) {
	switch c.Log.Level {
	case "debug", "info", "warn", "error":
	default:
		v.add("log.level", "must be debug, info, warn or error, got %q", c.Log.Level)
	}
	switch c.Log.Format {
	case "text", "json":
	default:
		v.add("log.format", "must be text or json, got %q", c.Log.Format)
	}
}

// checkFamilies checks s as one IP address or two of different families
// separated by a comma, reports problems at path and returns the addresses.
// An external (advertised) address must not be the unspecified address.
func checkFamilies(v *validator, path, s string, external bool) ([]netip.Addr, bool) {
	var out []netip.Addr
	ok := true
	for _, part := range SplitAddresses(s) {
		msg := checkIP(part)
		if msg == "" && external && isUnspecified(part) {
			msg = "must be an address clients can reach, not the unspecified address"
		}
		if msg != "" {
			v.add(path, "%s", msg)
			ok = false
			continue
		}
		a := netip.MustParseAddr(part).Unmap()
		if slices.ContainsFunc(out, func(o netip.Addr) bool { return o.Is4() == a.Is4() }) {
			v.add(path, "%q: at most one IPv4 and one IPv6 address", s)
			ok = false
			continue
		}
		out = append(out, a)
	}
	if ok && s != "" && len(out) == 0 {
		v.add(path, "%q: not an IP address", s)
		ok = false
	}
	return out, ok
}
