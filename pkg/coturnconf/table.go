package coturnconf

// argKind is how an option takes its value, as in coturn's getopt table.
type argKind int

const (
	// argFlag is a boolean: bare means on; a value is read as coturn's
	// get_bool_value reads it (yes/no, on/off, 1/0, true/false).
	argFlag argKind = iota
	// argSwitch is a flag whose value coturn ignores: it is on once given.
	argSwitch
	// argOptional takes a value only as "--name=value" on a command line.
	argOptional
	// argRequired always takes a value ("--name value" or "--name=value").
	argRequired
)

// spec describes one coturn option.
type spec struct {
	name   string
	short  byte // turnserver's one-letter flag, 0 if none
	arg    argKind
	repeat bool // accumulates; otherwise the last occurrence wins
	// sev and why say what turnd does instead, for the options the
	// converter does not map onto a turnd key. why is empty for the options
	// convert*.go handles.
	sev Severity
	why string
}

const (
	whyDatabase = "turnd has no user database: users and TURN REST secrets live in its config file " +
		"(auth.users, auth.secrets). coturn's database holds users as keys, which turnd cannot use: re-issue " +
		"their passwords; copy REST secrets (turnadmin -S) into auth.secrets"
	whyCLI      = "turnd has no telnet CLI: use `turnd status`, `turnd drain` and the HTTP endpoints (/status, /metrics)"
	whyWebAdmin = "turnd has no web admin interface: use /status and /metrics on http.address, and `turnd status`"
	whyLogging  = "turnd logs to stderr (log.format text or json) for journald or kubectl logs; nothing to carry over"
	whyDB       = "only matters with a user database, which turnd does not have; nothing to carry over"
	whyDH       = "Go's TLS uses no finite-field Diffie-Hellman parameters; nothing to carry over"
	whyFamily   = "turnd gives an IPv4 relay unless the client asks for IPv6 with REQUESTED-ADDRESS-FAMILY, whatever " +
		"the client's own family; relay.address names one address of each family it relays in"
	why5780 = "turnd does not implement RFC 5780 (NAT behaviour discovery), which needs a second address and port"
	whyUser = "turnd does not switch user: start it as that user (systemd User=/Group=, as deploy/systemd/turnd.service does)"
)

// specs is coturn 4.6's option table (turnserver --help, mainrelay.c), plus
// options of later releases that configs in the wild carry. It is read-only.
var specs = [...]spec{
	// Listeners and relay addresses.
	{name: "listening-port", short: 'p', arg: argRequired},
	{name: "tls-listening-port", arg: argRequired},
	{name: "listening-ip", short: 'L', arg: argRequired, repeat: true},
	{name: "relay-ip", short: 'E', arg: argRequired, repeat: true},
	{name: "external-ip", short: 'X', arg: argRequired, repeat: true},
	{name: "min-port", arg: argRequired},
	{name: "max-port", arg: argRequired},
	{name: "no-udp", arg: argFlag},
	{name: "no-tcp", arg: argFlag},
	{name: "no-tls", arg: argFlag},
	{name: "no-dtls", arg: argFlag},
	{name: "no-udp-relay", arg: argFlag},
	{name: "no-tcp-relay", arg: argFlag},
	{name: "listening-device", short: 'd', arg: argRequired, sev: Warning,
		why: "turnd does not bind to a device (SO_BINDTODEVICE): list the device's addresses with listening-ip"},
	{name: "relay-device", short: 'i', arg: argRequired, sev: Warning,
		why: "turnd does not bind to a device (SO_BINDTODEVICE): give the device's address as relay-ip"},
	{name: "alt-listening-port", arg: argRequired},
	{name: "alt-tls-listening-port", arg: argRequired},
	{name: "tcp-proxy-port", arg: argRequired},
	{name: "relay-threads", short: 'm', arg: argRequired, sev: Note,
		why: "turnd sizes itself: one SO_REUSEPORT UDP socket per CPU (listen.udp_sockets: 0); set listen.udp_sockets to pin a number"},
	{name: "ne", arg: argRequired, sev: Note,
		why: "turnd has one network engine (SO_REUSEPORT sockets per CPU); nothing to carry over"},
	{name: "server-relay", arg: argFlag, sev: Warning, why: "server relay (non-standard) is not supported"},
	{name: "keep-address-family", short: 'K', arg: argFlag, sev: Warning, why: whyFamily},
	{name: "allocation-default-address-family", short: 'A', arg: argRequired, sev: Warning, why: whyFamily},

	// Credentials.
	{name: "realm", short: 'r', arg: argRequired},
	{name: "lt-cred-mech", short: 'a', arg: argFlag},
	{name: "no-auth", short: 'z', arg: argFlag},
	{name: "user", short: 'u', arg: argRequired, repeat: true},
	{name: "use-auth-secret", arg: argSwitch},
	{name: "static-auth-secret", arg: argRequired, repeat: true},
	{name: "rest-api-separator", short: 'C', arg: argRequired},
	{name: "userdb", short: 'b', arg: argRequired, sev: Warning, why: whyDatabase},
	{name: "db", arg: argRequired, sev: Warning, why: whyDatabase},
	{name: "psql-userdb", short: 'e', arg: argRequired, sev: Warning, why: whyDatabase},
	{name: "sql-userdb", arg: argRequired, sev: Warning, why: whyDatabase},
	{name: "mysql-userdb", short: 'M', arg: argRequired, sev: Warning, why: whyDatabase},
	{name: "mongo-userdb", short: 'J', arg: argRequired, sev: Warning, why: whyDatabase},
	{name: "redis-userdb", short: 'N', arg: argRequired, sev: Warning, why: whyDatabase},
	{name: "secret-key-file", arg: argRequired, sev: Warning,
		why: "only decrypts passwords stored in coturn's database, which turnd does not read"},
	{name: "no-auth-pings", arg: argSwitch, sev: Note, why: whyDB},
	{name: "no-dynamic-ip-list", arg: argSwitch, sev: Note, why: whyDB},
	{name: "no-dynamic-realms", arg: argSwitch, sev: Note, why: whyDB},
	{name: "oauth", arg: argFlag, sev: Warning,
		why: "third-party authorization (oAuth, RFC 7635) is not supported: clients need long-term or TURN REST credentials"},
	{name: "server-name", arg: argRequired, sev: Note, why: "only used with oAuth, which turnd does not support"},
	{name: "check-origin-consistency", arg: argFlag, sev: Warning, why: "turnd does not check the ORIGIN attribute"},

	// Peers.
	{name: "allowed-peer-ip", arg: argRequired, repeat: true},
	{name: "denied-peer-ip", arg: argRequired, repeat: true},
	{name: "allow-loopback-peers", arg: argFlag},
	{name: "no-multicast-peers", arg: argFlag},

	// Quotas and lifetimes.
	{name: "user-quota", short: 'q', arg: argRequired},
	{name: "total-quota", short: 'Q', arg: argRequired},
	{name: "max-allocate-lifetime", arg: argOptional},
	{name: "channel-lifetime", arg: argOptional},
	{name: "permission-lifetime", arg: argOptional},
	{name: "max-bps", short: 's', arg: argRequired},
	{name: "bps-capacity", short: 'B', arg: argRequired},
	{name: "stale-nonce", arg: argOptional, sev: Note,
		why: "turnd issues and expires nonces itself (an hour); nothing to configure"},
	{name: "max-allocate-timeout", arg: argRequired, sev: Note,
		why: "turnd uses a fixed 30 s timeout for RFC 6062 TCP connection attempts (RFC 6062 §5.2's minimum)"},

	// TLS.
	{name: "cert", arg: argRequired},
	{name: "pkey", arg: argRequired},
	{name: "pkey-pwd", arg: argRequired, sev: Warning,
		why: "turnd reads unencrypted PEM keys only: decrypt the key (openssl pkey -in KEY -out PLAIN) and use that file"},
	{name: "raw-public-keys", arg: argFlag, sev: Warning,
		why: "TLS with raw public keys (RFC 7250) is not supported: use an X.509 certificate"},
	{name: "cipher-list", arg: argRequired, sev: Warning,
		why: "turnd uses Go's TLS defaults (TLS 1.2 and 1.3, modern cipher suites); the list cannot be changed"},
	{name: "CA-file", arg: argRequired, sev: Warning,
		why: "turnd does not verify client certificates: TLS clients authenticate with TURN credentials only"},
	{name: "dh-file", arg: argRequired, sev: Note, why: whyDH},
	{name: "dh566", arg: argFlag, sev: Note, why: whyDH},
	{name: "dh1066", arg: argFlag, sev: Note, why: whyDH},
	{name: "dh2066", arg: argFlag, sev: Note, why: whyDH}, // coturn 4.5
	{name: "ec-curve-name", arg: argRequired, sev: Note, why: "Go's TLS chooses the elliptic curves itself"},
	{name: "no-tlsv1", arg: argFlag, sev: Note, why: "turnd accepts TLS 1.2 and 1.3 only: TLS 1.0 is always off"},
	{name: "no-tlsv1_1", arg: argFlag, sev: Note, why: "turnd accepts TLS 1.2 and 1.3 only: TLS 1.1 is always off"},
	{name: "no-tlsv1_2", arg: argFlag, sev: Warning, why: "turnd accepts TLS 1.2 and 1.3; TLS 1.2 cannot be switched off"},
	{name: "acme-redirect", arg: argRequired, sev: Warning,
		why: "turnd answers no HTTP on its TURN ports: get certificates another way (cert-manager, certbot)"},

	// Metrics, admin interfaces, alternates.
	{name: "prometheus", arg: argSwitch},
	{name: "prometheus-port", arg: argOptional},
	{name: "prometheus-address", arg: argOptional},
	{name: "prometheus-username-labels", arg: argSwitch, sev: Warning, why: "turnd labels by name only the users listed in http.metrics_users (the rest as user=\"other\"), never every user"},
	{name: "redis-statsdb", short: 'O', arg: argRequired, sev: Warning,
		why: "turnd publishes no statistics to Redis: scrape /metrics (Prometheus) instead"},
	{name: "no-cli", arg: argFlag, sev: Note, why: "turnd has no telnet CLI: nothing to switch off"},
	{name: "cli-ip", arg: argRequired, sev: Warning, why: whyCLI},
	{name: "cli-port", arg: argRequired, sev: Warning, why: whyCLI},
	{name: "cli-password", arg: argRequired, sev: Warning, why: whyCLI},
	{name: "cli-max-output-sessions", arg: argRequired, sev: Warning, why: whyCLI},
	{name: "web-admin", arg: argFlag, sev: Warning, why: whyWebAdmin},
	{name: "web-admin-ip", arg: argRequired, sev: Warning, why: whyWebAdmin},
	{name: "web-admin-port", arg: argRequired, sev: Warning, why: whyWebAdmin},
	{name: "web-admin-listen-on-workers", arg: argFlag, sev: Warning, why: whyWebAdmin},
	{name: "alternate-server", arg: argRequired, repeat: true},
	{name: "tls-alternate-server", arg: argRequired, repeat: true, sev: Warning,
		why: "turnd has one list of alternate servers (drain.alternate_servers) for every transport, used only while draining; over TLS it names them with its own TLS port"},
	{name: "aux-server", arg: argRequired, repeat: true, sev: Warning, why: why5780},
	{name: "udp-self-balance", arg: argFlag, sev: Warning, why: "turnd does not redirect clients among its own addresses"},
	{name: "drain-min-allocations", arg: argRequired, sev: Note,
		why: "turnd's drain ends when no allocation is left or when drain.timeout has passed; set drain.timeout instead"},

	// STUN behaviour.
	{name: "fingerprint", short: 'f', arg: argFlag, sev: Note,
		why: "nothing to configure: turnd accepts FINGERPRINT in requests"},
	{name: "secure-stun", arg: argFlag, sev: Warning, why: "turnd answers STUN Binding requests without authentication"},
	{name: "no-stun", arg: argFlag, sev: Warning, why: "turnd always answers STUN Binding requests"},
	{name: "stun-only", short: 'S', arg: argFlag, sev: Warning,
		why: "turnd always serves TURN as well as STUN, to clients with valid credentials"},
	{name: "mobility", arg: argFlag, sev: Warning, why: "ICE mobility (RFC 8016 MOBILITY-TICKET) is not supported"},
	{name: "no-rfc5780", arg: argSwitch, sev: Note, why: "turnd does not implement RFC 5780, which is what this option asks for"},
	{name: "response-origin-only-with-rfc5780", arg: argFlag, sev: Note,
		why: "turnd does not implement RFC 5780; nothing to carry over"},
	{name: "no-stun-backward-compatibility", arg: argFlag, sev: Note,
		why: "turnd speaks RFC 5389 STUN only, which is what this option asks for"},
	{name: "respond-http-unsupported", arg: argFlag, sev: Note, why: "turnd answers no HTTP on its TURN ports"},
	{name: "software-attribute", arg: argFlag, sev: Note, why: "turnd's responses carry no SOFTWARE attribute"},
	{name: "no-software-attribute", arg: argFlag, sev: Note, why: "turnd's responses carry no SOFTWARE attribute"},

	// Process and logging.
	{name: "pidfile", arg: argRequired},
	{name: "verbose", short: 'v', arg: argFlag},
	{name: "Verbose", short: 'V', arg: argFlag},
	{name: "log-file", short: 'l', arg: argRequired},
	{name: "no-stdout-log", arg: argFlag, sev: Note, why: whyLogging},
	{name: "syslog", arg: argFlag, sev: Note, why: whyLogging},
	{name: "syslog-facility", arg: argRequired, sev: Note, why: whyLogging},
	{name: "simple-log", arg: argFlag, sev: Note, why: whyLogging},
	{name: "new-log-timestamp", arg: argSwitch, sev: Note, why: whyLogging},
	{name: "new-log-timestamp-format", arg: argRequired, sev: Note, why: whyLogging},
	{name: "log-binding", arg: argFlag, sev: Note, why: "not configurable in turnd; ignored"},
	{name: "daemon", short: 'o', arg: argFlag, sev: Note,
		why: "turnd stays in the foreground: let systemd (deploy/systemd) or Kubernetes supervise it"},
	{name: "proc-user", arg: argRequired, sev: Note, why: whyUser},
	{name: "proc-group", arg: argRequired, sev: Note, why: whyUser},
	{name: "version", arg: argFlag, sev: Note, why: "prints coturn's version; ignored"},
}

// lookup returns the spec of a long option name (without dashes).
func lookup(name string) (spec, bool) {
	for _, s := range specs {
		if s.name == name {
			return s, true
		}
	}
	return spec{}, false
}

// lookupShort returns the spec of a one-letter command-line flag.
func lookupShort(c byte) (spec, bool) {
	for _, s := range specs {
		if s.short == c && c != 0 {
			return s, true
		}
	}
	return spec{}, false
}
