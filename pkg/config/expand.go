package config

import (
	"fmt"
	"regexp"
)

// envRef is the only form expanded: ${NAME}. A bare $ stays as it is, so an
// IPv6 literal or anything else with a dollar sign is never mangled.
var envRef = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`)

// expandAddresses replaces ${NAME} references in the address fields — and
// only there — with values from lookup (the process environment). This is how
// a Kubernetes pod on hostNetwork learns its node's IP from the downward API
// without an init container: the chart writes "${TURND_NODE_IP}:3478".
// Credentials are never expanded: a password may legitimately contain "${".
// A reference to an unset or empty variable is a problem at that field's path.
func (c *Config) expandAddresses(lookup func(string) (string, bool)) []Problem {
	var problems []Problem
	expand := func(path string, s *string) {
		var missing []string
		*s = envRef.ReplaceAllStringFunc(*s, func(ref string) string {
			name := envRef.FindStringSubmatch(ref)[1]
			v, ok := lookup(name)
			if !ok || v == "" {
				missing = append(missing, name)
				return ref
			}
			return v
		})
		for _, name := range missing {
			problems = append(problems, Problem{Path: path, Message: fmt.Sprintf("environment variable %s is not set", name)})
		}
	}
	lists := []struct {
		path string
		xs   []string
	}{
		{"listen.udp", c.Listen.UDP}, {"listen.tcp", c.Listen.TCP}, {"listen.tls", c.Listen.TLS},
		{"listen.tcp_tls", c.Listen.TCPTLS},
		{"listen.proxy_protocol.listeners", c.Listen.ProxyProtocol.Listeners},
		{"drain.alternate_servers", c.Drain.AlternateServers},
	}
	for _, l := range lists {
		for i := range l.xs {
			expand(index(l.path, i), &l.xs[i])
		}
	}
	expand("relay.address", &c.Relay.Address)
	expand("relay.external_address", &c.Relay.ExternalAddress)
	expand("http.address", &c.HTTP.Address)
	return problems
}
