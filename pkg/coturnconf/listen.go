package coturnconf

import (
	"net"
	"net/netip"
	"path/filepath"
	"strconv"
	"strings"
)

// coturn's default ports.
const (
	defaultPort    = 3478
	defaultTLSPort = 5349
)

// listen converts the listeners: listening-ip × listening-port for UDP and
// TCP, × tls-listening-port for TLS when a certificate is configured.
func (c *converter) listen() {
	port, portWhy := c.port("listening-port", defaultPort)
	tlsPort, tlsPortWhy := c.port("tls-listening-port", defaultTLSPort)
	ips, ipOpts := c.addrs("listening-ip")
	hosts, hostWhy := make([]string, 0, len(ips)), ""
	for _, ip := range ips {
		hosts = append(hosts, ip.String())
	}
	switch {
	case len(hosts) == 0 && len(c.opts["listening-ip"]) > 0:
		// Listening everywhere instead of on addresses that were meant to
		// restrict it would widen exposure: leave turnd without listeners.
		c.warnAll("listening-ip", Warning, "no listening-ip is usable, so there is no listener: fix the addresses")
	case len(hosts) == 0:
		hosts = []string{"0.0.0.0"}
		hostWhy = "every IPv4 address"
		c.warnAll("listening-ip", Note, "not set: coturn listened on every address of the machine, IPv4 and IPv6; "+
			"turnd listens on 0.0.0.0 (every IPv4 address): list IPv6 addresses with listening-ip to keep them")
	default:
		hostWhy = joinSrc(ipOpts)
	}
	join := func(port int) []string {
		out := make([]string, len(hosts))
		for i, h := range hosts {
			out[i] = net.JoinHostPort(h, strconv.Itoa(port))
		}
		return out
	}
	c.transport("udp", "no-udp", join(port), hostWhy+", "+portWhy)
	c.transport("tcp", "no-tcp", join(port), hostWhy+", "+portWhy)
	c.extraPorts(join, hostWhy)

	noTLS, tlsOff := c.flag("no-tls")
	cert, hasCert := c.last("cert")
	key, hasKey := c.last("pkey")
	noDTLS, dtlsOff := c.flag("no-dtls")
	if dtlsOff {
		c.note(noDTLS, "turnd has no DTLS listener: the same as this option")
	}
	switch {
	case tlsOff:
		c.cfg.Listen.TLS = []string{}
		c.why["listen.tls"] = src(noTLS)
		if hasCert || hasKey {
			c.note(noTLS, "cert= and pkey= are not carried over: there is no TLS listener")
		}
		return
	case !hasCert || !hasKey:
		c.cfg.Listen.TLS = []string{}
		msg := "no TLS listener: coturn opens TLS listeners only with a certificate (cert=) and key (pkey=); without them it " +
			"looked for turn_server_cert.pem and turn_server_pkey.pem in its config directories. Add cert= and pkey= if it used those"
		if o, ok := c.last("tls-listening-port"); ok {
			c.warn(o, "%s", msg)
		} else {
			c.warnAll("cert", Note, "%s", msg)
		}
		return
	}
	c.cfg.Listen.TLS = join(tlsPort)
	c.why["listen.tls"] = hostWhy + ", " + tlsPortWhy + ", " + src(cert)
	if o, ok := c.last("alt-tls-listening-port"); ok {
		if n, ok := c.integer(o, isPort); ok && n != tlsPort {
			c.cfg.Listen.TLS = append(c.cfg.Listen.TLS, join(n)...)
			c.why["listen.tls"] += ", " + src(o)
			c.note(o, "turnd listens on port %d too, so clients given it keep working; %s", n, why5780)
		} else {
			c.warn(o, "%q is not a port other than the TLS port; not carried over", o.Value)
		}
	}
	c.cfg.TLS.CertFile, c.why["tls.cert_file"] = c.path(cert), src(cert)
	c.cfg.TLS.KeyFile, c.why["tls.key_file"] = c.path(key), src(key)
	if !dtlsOff {
		c.warnAll("no-dtls", Warning, "not set: coturn also accepted DTLS on UDP port %d; turnd has no DTLS "+
			"(clients use TLS over TCP, or plain UDP)", tlsPort)
	}
}

// extraPorts adds the listeners coturn opens on other ports than
// listening-port: alt-listening-port (UDP and TCP) and tcp-proxy-port (TCP
// behind a load balancer that sends PROXY protocol headers).
func (c *converter) extraPorts(join func(int) []string, hostWhy string) {
	taken := map[string]bool{}
	for _, a := range c.cfg.Listen.TCP {
		taken[a] = true
	}
	for _, a := range c.cfg.Listen.UDP {
		taken[a] = true
	}
	port := func(o Option) ([]string, bool) {
		n, ok := c.integer(o, isPort)
		addrs := join(n)
		if !ok || len(addrs) == 0 || taken[addrs[0]] {
			c.warn(o, "%q is not a port of its own (listening-port or another listener has it); not carried over", o.Value)
			return nil, false
		}
		for _, a := range addrs {
			taken[a] = true
		}
		return addrs, true
	}
	if o, ok := c.last("alt-listening-port"); ok {
		if addrs, ok := port(o); ok {
			for _, l := range []struct {
				path string
				dst  *[]string
			}{{"listen.udp", &c.cfg.Listen.UDP}, {"listen.tcp", &c.cfg.Listen.TCP}} {
				if len(*l.dst) > 0 { // not switched off by no-udp / no-tcp
					*l.dst = append(*l.dst, addrs...)
					c.why[l.path] += ", " + src(o)
				}
			}
			c.note(o, "turnd listens on port %s too, so clients given it keep working; %s", o.Value, why5780)
		}
	}
	if o, ok := c.last("tcp-proxy-port"); ok {
		if addrs, ok := port(o); ok {
			c.cfg.Listen.TCP = append(c.cfg.Listen.TCP, addrs...)
			c.why["listen.tcp"] += ", " + src(o)
			pp := &c.cfg.Listen.ProxyProtocol
			pp.Listeners = addrs
			pp.Trusted = []string{"0.0.0.0/0", "::/0"}
			c.why["listen.proxy_protocol.listeners"] = hostWhy + ", " + src(o)
			c.why["listen.proxy_protocol.trusted"] = "coturn believed a header from any source"
			c.warn(o, "coturn believed a PROXY protocol header from any source on this port, and so does this import "+
				"(listen.proxy_protocol.trusted: 0.0.0.0/0, ::/0): narrow it to your load balancers' addresses, or any "+
				"client can choose the address that per-IP limits and logs see")
		}
	}
}

// transport sets listen.udp or listen.tcp unless coturn's no-udp/no-tcp is on.
func (c *converter) transport(kind, off string, addrs []string, why string) {
	path := "listen." + kind
	if o, on := c.flag(off); on {
		addrs, why = []string{}, src(o)
	}
	if kind == "udp" {
		c.cfg.Listen.UDP = addrs
	} else {
		c.cfg.Listen.TCP = addrs
	}
	c.why[path] = why
}

// port reads a port option, falling back to coturn's default.
func (c *converter) port(name string, def int) (int, string) {
	o, ok := c.last(name)
	if !ok {
		return def, "port " + strconv.Itoa(def) + " (coturn's default)"
	}
	n, ok := c.integer(o, isPort)
	if !ok {
		c.warn(o, "%q is not a port; using coturn's default %d", o.Value, def)
		return def, "port " + strconv.Itoa(def) + " (coturn's default)"
	}
	return n, src(o)
}

// addrs reads a repeatable IP option, skipping what is not an IP literal
// and repeats of the same address.
func (c *converter) addrs(name string) ([]netip.Addr, []Option) {
	var ips []netip.Addr
	var used []Option
	for _, o := range c.opts[name] {
		ip, ok := c.ip(o, strings.TrimSpace(o.Value))
		if !ok {
			continue
		}
		dup := false
		for _, seen := range ips {
			dup = dup || seen == ip
		}
		if dup {
			c.note(o, "%s is listed already", ip)
			continue
		}
		ips, used = append(ips, ip), append(used, o)
	}
	return ips, used
}

// ip parses an IP literal for option o, reporting anything else.
func (c *converter) ip(o Option, s string) (netip.Addr, bool) {
	ip, err := netip.ParseAddr(s)
	if err != nil || ip.Zone() != "" {
		c.warn(o, "%q is not an IP address: turnd needs literal addresses; not carried over", s)
		return netip.Addr{}, false
	}
	return ip.Unmap(), true
}

// path returns a file option's path, pointing out that coturn searched its
// config directories for relative ones and turnd does not.
func (c *converter) path(o Option) string {
	p := strings.TrimSpace(o.Value)
	if !filepath.IsAbs(p) {
		c.warn(o, "relative path %q: coturn searched its config directories (such as /etc/coturn, /usr/local/etc) "+
			"for it, turnd opens it relative to its working directory: give the absolute path", p)
	}
	return p
}

// joinSrc lists several options' sources for one comment.
func joinSrc(os []Option) string {
	parts := make([]string, len(os))
	for i, o := range os {
		parts[i] = src(o)
	}
	return strings.Join(parts, ", ")
}
