package config

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Fleet joins turnd to a fleet of nodes that share quotas, sessions,
// disconnects, revocations and usage through Redis (docs/fleet.md). An
// empty Redis leaves turnd a single node, as without the section.
type Fleet struct {
	// Redis is the server's URL: redis://[user[:password]@]host:port[/db],
	// rediss:// for TLS, or unix:///path/redis.sock. Default "" (no fleet).
	Redis string `yaml:"redis"`
	// PasswordFile holds the Redis password (a mounted Secret), replacing
	// the URL's; read at start. Default "" (the URL's, or none).
	PasswordFile string `yaml:"password_file"`
	// CAFile is a PEM bundle that verifies a rediss:// server. Default ""
	// (the system's roots).
	CAFile string `yaml:"ca_file"`
	// Node is this node's name in the fleet; two live nodes must not share
	// one. Default "" (the hostname).
	Node string `yaml:"node"`
	// Prefix starts every key turnd writes. Default "turnd:".
	Prefix string `yaml:"prefix"`
	// Lease is how long a node's counts outlive its last heartbeat: a node
	// that dies stops counting after it. Default 10s.
	Lease time.Duration `yaml:"lease"`
	// Timeout bounds the one Redis round trip of an Allocate. Default 250ms.
	Timeout time.Duration `yaml:"timeout"`
	// OnOutage is what an Allocate gets while Redis cannot answer: "local"
	// (this node's limits only, counted in the fleet once Redis is back)
	// or "refuse" (486). Default "local".
	OnOutage string `yaml:"on_outage"`
	// TotalAllocations caps the live allocations of the whole fleet (486
	// past it). Default 0 (no cap).
	TotalAllocations int `yaml:"total_allocations"`
	// Advertise are the TURN URIs that reach this node, offered by the
	// credentials endpoint and, by their address, in a draining peer's 300.
	// Default [] (derived from listen.udp, tcp and tls where those are
	// specific addresses).
	Advertise []string `yaml:"advertise"`
	// Credentials configures GET /credentials.
	Credentials FleetCredentials `yaml:"credentials"`
}

// FleetCredentials configures GET /credentials, which hands out TURN REST
// API credentials with the least-loaded ready nodes' URIs.
type FleetCredentials struct {
	// TokenFile holds the bearer token the endpoint requires, read on
	// every request. Default "" (the endpoint is off, 404).
	TokenFile string `yaml:"token_file"`
	// TTL is how long handed-out credentials are valid. Default 1h.
	TTL time.Duration `yaml:"ttl"`
	// Nodes is how many nodes' URIs an answer lists. Default 3.
	Nodes int `yaml:"nodes"`
}

// FleetOn reports whether turnd is one node of a fleet.
func (c Config) FleetOn() bool { return c.Fleet.Redis != "" }

func (c Config) checkFleet(v *validator) {
	f := c.Fleet
	if !c.FleetOn() {
		if f.Credentials.TokenFile != "" {
			v.add("fleet.credentials.token_file", "needs fleet.redis")
		}
		return
	}
	v.addIf("fleet.redis", checkRedisURL(f.Redis))
	if f.CAFile != "" && !strings.HasPrefix(f.Redis, "rediss://") {
		v.add("fleet.ca_file", "needs a rediss:// fleet.redis")
	}
	if n := f.Node; len(n) > 64 || strings.ContainsAny(n, " \t\r\n*?[]{}") {
		v.add("fleet.node", "%q: at most 64 characters, no spaces or glob characters", n)
	}
	if strings.ContainsAny(f.Prefix, " \t\r\n*?[]") {
		v.add("fleet.prefix", "%q: no spaces or glob characters", f.Prefix)
	}
	if f.Lease < time.Second {
		v.add("fleet.lease", "must be at least 1s")
	}
	switch {
	case f.Timeout <= 0:
		v.add("fleet.timeout", "must be > 0")
	case f.Timeout > f.Lease/3:
		v.add("fleet.timeout", "must be at most a third of fleet.lease (%s)", f.Lease/3)
	}
	if f.OnOutage != "local" && f.OnOutage != "refuse" {
		v.add("fleet.on_outage", "%q: must be local or refuse", f.OnOutage)
	}
	if f.TotalAllocations < 0 {
		v.add("fleet.total_allocations", "must be >= 0 (0 means unlimited)")
	}
	for i, u := range f.Advertise {
		if _, err := ParseTURNURI(u); err != nil {
			v.add(fmt.Sprintf("fleet.advertise[%d]", i), "%q: %s", u, err.Error())
		}
	}
	cr := f.Credentials
	switch {
	case cr.TTL < time.Second:
		v.add("fleet.credentials.ttl", "must be at least 1s")
	case c.Auth.MaxRESTValidity > 0 && cr.TTL > c.Auth.MaxRESTValidity:
		v.add("fleet.credentials.ttl", "%s: longer than auth.max_rest_validity (%s), so its credentials would be refused", cr.TTL, c.Auth.MaxRESTValidity)
	}
	if cr.Nodes < 1 {
		v.add("fleet.credentials.nodes", "must be at least 1")
	}
	if cr.TokenFile != "" {
		if len(c.Auth.Secrets) == 0 {
			v.add("fleet.credentials.token_file", "needs auth.secrets to sign the credentials with")
		}
		if c.HTTP.Address == "" {
			v.add("fleet.credentials.token_file", "needs http.address")
		}
	}
}

// checkRedisURL accepts the URLs go-redis parses: redis://, rediss://
// with a host, unix:// with an absolute path.
func checkRedisURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "not a URL"
	}
	s = u.Redacted()
	switch u.Scheme {
	case "redis", "rediss":
		if u.Host == "" {
			return fmt.Sprintf("%q: needs a host", s)
		}
	case "unix":
		if !filepath.IsAbs(u.Path) {
			return fmt.Sprintf("%q: needs an absolute socket path", s)
		}
	default:
		return fmt.Sprintf("%q: must start with redis://, rediss:// or unix://", s)
	}
	return ""
}

// TURNURI is one parsed RFC 7065 URI: turn:host:port?transport=udp|tcp, or
// turns:host:port (TLS over TCP).
type TURNURI struct {
	Secure    bool
	Host      string
	Port      uint16
	Transport string // "udp" or "tcp"
}

// ParseTURNURI parses s; a missing port is 3478 (turn:) or 5349 (turns:),
// a missing transport udp for turn: and tcp for turns:.
func ParseTURNURI(s string) (TURNURI, error) {
	var u TURNURI
	rest, ok := strings.CutPrefix(s, "turns:")
	if ok {
		u.Secure, u.Port, u.Transport = true, 5349, "tcp"
	} else if rest, ok = strings.CutPrefix(s, "turn:"); ok {
		u.Port, u.Transport = 3478, "udp"
	} else {
		return u, errors.New("must start with turn: or turns:")
	}
	hostPort, query, _ := strings.Cut(rest, "?")
	if query != "" {
		t, ok := strings.CutPrefix(query, "transport=")
		if !ok || (t != "udp" && t != "tcp") || (u.Secure && t == "udp") {
			return u, errors.New("the only query is transport=udp or tcp (tcp for turns:)")
		}
		u.Transport = t
	}
	host, port, err := net.SplitHostPort(hostPort)
	if err != nil {
		host = hostPort // no port
	} else {
		p, perr := strconv.ParseUint(port, 10, 16)
		if perr != nil || p == 0 {
			return u, errors.New("bad port")
		}
		u.Port = uint16(p)
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if host == "" || strings.ContainsAny(host, " /@") {
		return u, errors.New("bad host")
	}
	u.Host = host
	return u, nil
}

// String is the URI in RFC 7065 form, with the port and transport spelt out.
func (u TURNURI) String() string {
	scheme := "turn:"
	if u.Secure {
		scheme = "turns:"
	}
	return scheme + net.JoinHostPort(u.Host, strconv.Itoa(int(u.Port))) + "?transport=" + u.Transport
}
