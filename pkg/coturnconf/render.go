package coturnconf

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"time"
)

// header opens every converted file.
const header = "turnd configuration converted from coturn by `turnd import-coturn`.\n" +
	"A comment names the coturn option each value came from (\"line N\" of the file, \"argument N\" of\n" +
	"the flags); values without one are turnd's defaults. Options that could not be carried over were\n" +
	"listed on stderr. Keys not written here keep turnd's defaults (turnd default-config shows them all).\n" +
	"Check the file with: turnd check-config --config FILE"

// render writes the keys coturn has a counterpart for, plus drain and http,
// in the order of turnd's default config and with the converter's comments.
// Keys left out (limits turnd has and coturn has not) keep their defaults.
func (c *converter) render() []byte {
	w := &writer{c: c}
	cfg := c.cfg
	w.comments(0, strings.Split(header, "\n"))
	w.blank()
	w.kv(0, "realm", q(cfg.Realm), "realm")

	w.section("listen")
	w.list(1, "listen.udp", cfg.Listen.UDP)
	w.list(1, "listen.tcp", cfg.Listen.TCP)
	w.list(1, "listen.tls", cfg.Listen.TLS)
	if pp := cfg.Listen.ProxyProtocol; len(pp.Listeners) > 0 {
		w.b.WriteString("  proxy_protocol:\n")
		w.list(2, "listen.proxy_protocol.listeners", pp.Listeners)
		w.list(2, "listen.proxy_protocol.trusted", pp.Trusted)
	}
	w.kv(1, "udp_sockets", strconv.Itoa(cfg.Listen.UDPSockets), "listen.udp_sockets")

	w.section("tls")
	w.kv(1, "cert_file", q(cfg.TLS.CertFile), "tls.cert_file")
	w.kv(1, "key_file", q(cfg.TLS.KeyFile), "tls.key_file")

	w.section("relay")
	w.kv(1, "address", q(cfg.Relay.Address), "relay.address")
	w.kv(1, "external_address", q(cfg.Relay.ExternalAddress), "relay.external_address")
	w.kv(1, "min_port", strconv.Itoa(cfg.Relay.MinPort), "relay.min_port")
	w.kv(1, "max_port", strconv.Itoa(cfg.Relay.MaxPort), "relay.max_port")
	w.kv(1, "tcp_allocations", strconv.FormatBool(cfg.Relay.TCPAllocations), "relay.tcp_allocations")

	w.section("auth")
	w.users(cfg.Auth.Users)
	w.list(1, "auth.secrets", cfg.Auth.Secrets)
	w.kv(1, "rest_separator", q(cfg.Auth.RESTSeparator), "auth.rest_separator")

	w.section("peers")
	w.kv(1, "allow_loopback", strconv.FormatBool(cfg.Peers.AllowLoopback), "peers.allow_loopback")
	w.list(1, "peers.allowed", cfg.Peers.Allowed)
	w.list(1, "peers.denied", cfg.Peers.Denied)

	w.section("limits")
	w.kv(1, "total_allocations", strconv.Itoa(cfg.Limits.TotalAllocations), "limits.total_allocations")
	w.kv(1, "user_allocations", strconv.Itoa(cfg.Limits.UserAllocations), "limits.user_allocations")
	w.kv(1, "max_lifetime", fmtDuration(cfg.Limits.MaxLifetime), "limits.max_lifetime")
	w.kv(1, "permission_lifetime", fmtDuration(cfg.Limits.PermissionLifetime), "limits.permission_lifetime")
	w.kv(1, "channel_lifetime", fmtDuration(cfg.Limits.ChannelLifetime), "limits.channel_lifetime")
	if cfg.Limits.MaxBPS != 0 { // only where coturn set one: most configs never do
		w.kv(1, "max_bps", strconv.FormatInt(cfg.Limits.MaxBPS, 10), "limits.max_bps")
	}
	if cfg.Limits.TotalBPS != 0 {
		w.kv(1, "total_bps", strconv.FormatInt(cfg.Limits.TotalBPS, 10), "limits.total_bps")
	}

	w.section("drain")
	w.kv(1, "timeout", fmtDuration(cfg.Drain.Timeout), "drain.timeout")
	w.kv(1, "delay", fmtDuration(cfg.Drain.Delay), "drain.delay")
	w.list(1, "drain.alternate_servers", cfg.Drain.AlternateServers)

	w.section("http")
	w.kv(1, "address", q(cfg.HTTP.Address), "http.address")

	w.section("log")
	w.kv(1, "level", cfg.Log.Level, "log.level")
	w.kv(1, "format", cfg.Log.Format, "log.format")

	w.blank()
	w.kv(0, "pidfile", q(cfg.PIDFile), "pidfile")
	return w.b.Bytes()
}

// writer builds the YAML text.
type writer struct {
	b bytes.Buffer
	c *converter
}

func (w *writer) blank() { w.b.WriteByte('\n') }

func (w *writer) comments(indent int, lines []string) {
	for _, l := range lines {
		w.b.WriteString(strings.Repeat("  ", indent) + "# " + l + "\n")
	}
}

// section starts a top-level mapping, after its head comment if any.
func (w *writer) section(key string) {
	w.blank()
	w.comments(0, w.c.head[key])
	w.b.WriteString(key + ":\n")
}

// kv writes "key: value", with the comment recorded for path.
func (w *writer) kv(indent int, key, value, path string) {
	w.b.WriteString(strings.Repeat("  ", indent) + key + ": " + value)
	w.why(w.c.why[path])
}

func (w *writer) why(s string) {
	if s != "" {
		w.b.WriteString("  # " + s)
	}
	w.b.WriteByte('\n')
}

// list writes a list in flow style, or as a block when its entries have
// comments of their own.
func (w *writer) list(indent int, path string, vals []string) {
	key := path[strings.LastIndexByte(path, '.')+1:]
	pad := strings.Repeat("  ", indent)
	items := w.c.items[path]
	if len(vals) == 0 || len(items) != len(vals) {
		quoted := make([]string, len(vals))
		for i, v := range vals {
			quoted[i] = q(v)
		}
		w.b.WriteString(pad + key + ": [" + strings.Join(quoted, ", ") + "]")
		w.why(w.c.why[path])
		return
	}
	w.b.WriteString(pad + key + ":")
	w.why(w.c.why[path])
	for i, v := range vals {
		w.b.WriteString(pad + "  - " + q(v))
		w.why(items[i])
	}
}

// users writes auth.users in the order the coturn config gave them.
func (w *writer) users(users map[string]string) {
	if len(users) == 0 {
		w.b.WriteString("  users: {}\n")
		return
	}
	w.b.WriteString("  users:\n")
	for _, name := range w.c.userOrder {
		w.b.WriteString("    " + q(name) + ": " + q(users[name]))
		w.why(w.c.why["auth.users."+name])
	}
}

// q quotes s as a YAML double-quoted scalar: JSON's string syntax is a
// subset of it, and quoting everything keeps "yes", "0x12" or "#" literal.
func q(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	return strings.TrimSuffix(b.String(), "\n")
}

// fmtDuration writes a Go duration without zero units: "1h", "10m", "1h30m".
func fmtDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
