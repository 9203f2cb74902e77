package coturnconf

import (
	"net"
	"net/netip"
	"strconv"
	"strings"
)

// defaultPrometheusPort is coturn's prometheus-port default, which is also
// the port of turnd's HTTP listener.
const defaultPrometheusPort = 9641

// operations converts what surrounds the relay: the metrics listener,
// logging, the pidfile, alternate servers, and the drain.
func (c *converter) operations() {
	c.http()
	c.logging()
	if o, ok := c.last("pidfile"); ok {
		c.cfg.PIDFile, c.why["pidfile"] = strings.TrimSpace(o.Value), src(o)+"; `turnd drain --pidfile` reads it"
	}
	c.alternates()
	c.head["drain"] = []string{
		"coturn 4.6.1 has no drain (SIGTERM drops every call) and later releases drain on SIGUSR1 with no",
		"deadline. turnd drains on SIGTERM (SIGUSR1 too): new allocations get 486, live ones keep relaying,",
		"and it exits when the last one ends or after delay + timeout. Give systemd's TimeoutStopSec or",
		"Kubernetes' terminationGracePeriodSeconds more than that, and remove preStop hooks that sent",
		"SIGUSR1 and polled. `turnd drain --wait` shows a drain's progress.",
	}
}

// http turns coturn's Prometheus listener into turnd's HTTP listener, which
// serves /metrics with coturn's metric names and turnd's probes and /status.
func (c *converter) http() {
	port, portWhy := defaultPrometheusPort, ""
	if o, ok := c.last("prometheus-port"); ok && o.Value != "" {
		if n, ok := c.integer(o, isPort); ok {
			port, portWhy = n, ", "+src(o)
		} else {
			c.warn(o, "%q is not a port; using %d", o.Value, port)
		}
	}
	prom, on := c.flag("prometheus")
	if !on {
		c.cfg.HTTP.Address = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		c.why["http.address"] = "coturn had no prometheus listener; turnd keeps /metrics and /status on loopback for `turnd status`"
		return
	}
	host := "0.0.0.0" // coturn 4.6 listens on every address
	if o, ok := c.last("prometheus-address"); ok && strings.TrimSpace(o.Value) != "" {
		if ip, ok := c.ip(o, strings.TrimSpace(o.Value)); ok {
			host, portWhy = ip.String(), portWhy+", "+src(o)
		}
	}
	c.cfg.HTTP.Address = net.JoinHostPort(host, strconv.Itoa(port))
	c.why["http.address"] = src(prom) + portWhy
	c.note(prom, "turnd serves /metrics there with coturn's turn_total_allocations and turn_total_traffic_peer_* "+
		"beside its own metrics (not the client-side turn_total_traffic_* or per-realm turn_traffic_*), and also "+
		"/healthz, /readyz and /status: keep the port away from clients")
}

// logging maps coturn's verbosity; turnd always logs to stderr.
func (c *converter) logging() {
	if o, on := c.flag("Verbose"); on {
		c.cfg.Log.Level, c.why["log.level"] = "debug", src(o)
	} else if o, on := c.flag("verbose"); on {
		c.note(o, "turnd's default level (info) logs starts, drains, reloads, refusals and allocations made and ended; log.level debug adds channel bindings")
	}
	if o, ok := c.last("log-file"); ok {
		switch v := strings.TrimSpace(o.Value); v {
		case "stdout", "-", "stderr":
			c.note(o, "turnd logs to stderr")
		default:
			c.warn(o, "turnd logs to stderr, not to %s: read it from journald or kubectl logs, or redirect it", v)
		}
	}
}

// alternates carries alternate-server over to drain.alternate_servers, the
// only place turnd redirects clients.
func (c *converter) alternates() {
	for i, o := range c.opts["alternate-server"] {
		v := strings.TrimSpace(o.Value)
		ap, err := netip.ParseAddrPort(v)
		if err != nil {
			ip, ok := c.ip(o, v)
			if !ok {
				continue
			}
			ap = netip.AddrPortFrom(ip, defaultPort)
		}
		if i == 0 {
			c.warn(o, "coturn redirected every new allocation to its alternate servers (300 Try Alternate); turnd "+
				"serves allocations itself and redirects only while draining (drain.alternate_servers)")
		}
		c.cfg.Drain.AlternateServers = append(c.cfg.Drain.AlternateServers, ap.String())
		c.items["drain.alternate_servers"] = append(c.items["drain.alternate_servers"], src(o))
	}
}
