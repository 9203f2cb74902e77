// Package config defines turnd's configuration file: its types, the one place
// defaults come from, strict decoding and validation.
//
// Decoding is strict (unknown keys are errors), defaults come from Default(),
// and Validate reports every problem at once, each prefixed with its YAML path.
// The package knows nothing about sockets, pion or Prometheus: it only turns
// bytes into a checked Config.
package config

import "time"

// Config is the whole turnd configuration file.
type Config struct {
	// Realm is the long-term credential realm. Default "turnd.local"; must not be empty.
	Realm string `yaml:"realm"`
	// Listen holds the client-facing listening addresses.
	Listen Listen `yaml:"listen"`
	// TLS holds the certificate used by the TLS listeners.
	TLS TLS `yaml:"tls"`
	// Relay configures relay sockets (the peer-facing side).
	Relay Relay `yaml:"relay"`
	// Auth holds credentials: static users and TURN REST API secrets.
	Auth Auth `yaml:"auth"`
	// Peers is the peer address filter (SSRF protection).
	Peers Peers `yaml:"peers"`
	// Limits are quotas and lifetimes.
	Limits Limits `yaml:"limits"`
	// Drain configures graceful shutdown.
	Drain Drain `yaml:"drain"`
	// Handover configures the hand-over to a successor process (turnd
	// upgrade, turnd serve --take-over).
	Handover Handover `yaml:"handover"`
	// HTTP configures the metrics and probe listener.
	HTTP HTTP `yaml:"http"`
	// Log configures logging.
	Log Log `yaml:"log"`
	// Fleet joins this node to a fleet kept in Redis (fleet.go). Default
	// none: a single node.
	Fleet Fleet `yaml:"fleet"`
	// PIDFile, when set, is where turnd writes its process ID: a file it
	// renames into place, so its directory must be writable by turnd (as
	// systemd's RuntimeDirectory is). Default "" (none).
	PIDFile string `yaml:"pidfile"`
}

// Listen holds the client-facing listening addresses ("ip:port", IPv6 in
// brackets; port 0 picks a free port). A list written empty ([]) or without a
// value means none, not the default.
type Listen struct {
	// UDP addresses. Default ["127.0.0.1:3478"]. Empty means no UDP listener.
	UDP []string `yaml:"udp"`
	// TCP addresses. Default ["127.0.0.1:3478"]. Empty means no TCP listener.
	TCP []string `yaml:"tcp"`
	// TLS addresses (turns:). Default [] (none); needs tls.cert_file and tls.key_file.
	TLS []string `yaml:"tls"`
	// TCPTLS addresses serve plain TCP and TLS on one port, told apart by
	// each connection's first byte (a TLS handshake starts with 0x16; STUN
	// and ChannelData never do), as coturn does on its TLS port. Default []
	// (none); needs tls.cert_file and tls.key_file.
	TCPTLS []string `yaml:"tcp_tls"`
	// ProxyProtocol names the TCP and TLS listeners that sit behind a
	// layer-4 proxy sending a PROXY protocol header, and the proxies trusted
	// to send one. Default: none.
	ProxyProtocol ProxyProtocol `yaml:"proxy_protocol"`
	// UDPSockets is how many SO_REUSEPORT sockets each UDP address gets.
	// Default 0, which means one per CPU (GOMAXPROCS).
	UDPSockets int `yaml:"udp_sockets"`
	// SocketBuffer is the receive and send buffer, in bytes, asked for on
	// each client-facing UDP socket (the kernel caps it at
	// net.core.rmem_max/wmem_max). Default 4194304; 0 keeps the kernel default.
	SocketBuffer int `yaml:"socket_buffer"`
}

// ProxyProtocol configures PROXY protocol v1 and v2 (HAProxy's) on stream
// listeners. On a listed listener, a connection from a trusted proxy must
// start with a header, whose source address turnd then uses as the client's
// (XOR-MAPPED-ADDRESS, per-IP limits, logs, /status); a connection from
// anywhere else is served as a direct client if it sends no header and
// closed if it sends one, since an untrusted header would let any client
// choose the address turnd believes.
type ProxyProtocol struct {
	// Listeners are addresses of listen.tcp, listen.tls or listen.tcp_tls,
	// written as there. Default [] (none).
	Listeners []string `yaml:"listeners"`
	// Trusted are the proxies' addresses, each an IP or a CIDR. Default [];
	// required when listeners is set.
	Trusted []string `yaml:"trusted"`
}

// TLS names the certificate and key files (PEM) of the TLS listeners.
type TLS struct {
	// CertFile is the PEM certificate chain. Default "" (required when listen.tls or listen.tcp_tls is set).
	CertFile string `yaml:"cert_file"`
	// KeyFile is the PEM private key. Default "" (required when listen.tls or listen.tcp_tls is set).
	KeyFile string `yaml:"key_file"`
}

// Relay configures relay sockets.
type Relay struct {
	// Address is the IP relay sockets bind to, or an IPv4 and an IPv6
	// separated by a comma ("192.0.2.1,2001:db8::1") to relay in both
	// families (REQUESTED-ADDRESS-FAMILY picks). Default "" which means, for
	// each family, the first listen address of that family that is not a
	// wildcard (127.0.0.1 in the embedded default); a family with neither
	// has no relay (see ResolveRelay).
	Address string `yaml:"address"`
	// ExternalAddress is the IP advertised to clients in XOR-RELAYED-ADDRESS
	// (for a server behind NAT), or one per family separated by a comma.
	// Default "" which means the family's bind address; required for a family
	// whose relay sockets bind to the unspecified address (0.0.0.0 or ::).
	ExternalAddress string `yaml:"external_address"`
	// MinPort is the lowest relay port. Default 49152.
	MinPort int `yaml:"min_port"`
	// MaxPort is the highest relay port (inclusive). Default 65535.
	MaxPort int `yaml:"max_port"`
	// TCPAllocations allows RFC 6062 TCP allocations. Default true; false answers them with 442.
	TCPAllocations bool `yaml:"tcp_allocations"`
	// Offload relays UDP clients' ChannelData in the kernel (an eBPF
	// program on tc ingress): "off", "tc" (start fails if the kernel or the
	// privileges do not allow it), or "auto" (tc where they allow, else user
	// space with one log line saying why). Default "off".
	Offload string `yaml:"offload"`
	// OffloadInterfaces are the interfaces the kernel path attaches to.
	// Default [] which means every non-loopback Ethernet interface up at start.
	OffloadInterfaces []string `yaml:"offload_interfaces"`
}

// Auth holds credentials. At least one user or secret is required.
type Auth struct {
	// Users maps user name to password for the long-term credential mechanism. Default {} (none).
	Users map[string]string `yaml:"users"`
	// Secrets are TURN REST API shared secrets; every one is tried, so a new
	// secret can be added before the old one is removed. Default [].
	Secrets []string `yaml:"secrets"`
	// RESTSeparator separates expiry and user in REST usernames. Default ":".
	RESTSeparator string `yaml:"rest_separator"`
	// MaxRESTValidity refuses REST usernames whose expiry lies further in
	// the future than this (a credential service issues hours or a day, so
	// a far expiry is a forged or leaked-for-good credential). Default 168h
	// (7 days); 0 means any expiry up to year 9999.
	MaxRESTValidity time.Duration `yaml:"max_rest_validity"`
	// RevokedUsers are user IDs (static names, or the user part of REST
	// usernames) whose every request is refused with 401, whatever their
	// credentials; SIGHUP applies a change. Default [] (none).
	RevokedUsers []string `yaml:"revoked_users"`
	// DisconnectOnRevoke ends the live allocations of the users in
	// RevokedUsers whenever a reload (SIGHUP) applies the config. Default
	// false: they keep relaying until their next Refresh, which is refused.
	DisconnectOnRevoke bool `yaml:"disconnect_on_revoke"`
}

// Peers is the peer address filter. Loopback is checked first (denied unless
// AllowLoopback), then Allowed (wins), then Denied and the built-in
// special-purpose ranges.
type Peers struct {
	// AllowLoopback lets clients relay to 127.0.0.0/8 and ::1. Default false.
	AllowLoopback bool `yaml:"allow_loopback"`
	// Allowed entries (IP, CIDR, or "first-last" range) override Denied and the built-in list. Default [].
	Allowed []string `yaml:"allowed"`
	// Denied entries (IP, CIDR, or "first-last" range) add to the built-in list. Default [].
	Denied []string `yaml:"denied"`
}

// Limits are quotas and lifetimes.
type Limits struct {
	// TotalAllocations caps live allocations on this server. Default 0
	// (unlimited: the relay port range is the cap).
	TotalAllocations int `yaml:"total_allocations"`
	// UserAllocations caps live allocations per user (a REST user is the
	// part after the expiry), so a leaked credential cannot hold the relay
	// range. Default 128 (a browser takes 1-4 per call); 0 means unlimited.
	UserAllocations int `yaml:"user_allocations"`
	// MaxLifetime caps the lifetime a client may request. Default 1h; must be > 0.
	MaxLifetime time.Duration `yaml:"max_lifetime"`
	// PermissionLifetime is how long a permission lives. Default 5m; must be > 0.
	PermissionLifetime time.Duration `yaml:"permission_lifetime"`
	// ChannelLifetime is how long a channel binding lives. Default 10m; must be > 0.
	ChannelLifetime time.Duration `yaml:"channel_lifetime"`
	// IPAllocations caps live allocations per client IPv4 address or IPv6
	// /64 (one host's share). Default 256 (room for an office behind one NAT
	// address); 0 means unlimited.
	IPAllocations int `yaml:"ip_allocations"`
	// PrefixAllocations caps live allocations per client IPv4 /24 or IPv6
	// /48 together (one network's share), so that one network's many
	// addresses cannot hold the relay range between them. Default 2048 (an
	// eighth of the default relay range); 0 means unlimited. Below
	// ip_allocations it is raised to it (PrefixCaps).
	PrefixAllocations int `yaml:"prefix_allocations"`
	// PermissionsPerAllocation caps the peers one allocation may permit;
	// more are answered 508. Default 64; 0 means unlimited.
	PermissionsPerAllocation int `yaml:"permissions_per_allocation"`
	// ChannelsPerAllocation caps the channels one allocation may bind; more
	// are answered 508. Default 64; 0 means unlimited.
	ChannelsPerAllocation int `yaml:"channels_per_allocation"`
	// UnauthenticatedRate is how many requests per second one client IPv4
	// address or IPv6 /64 may send without credentials or with failing ones (the first leg of every
	// Allocate counts, and STUN Binding); past it, with a burst of twice the
	// rate, they are dropped unanswered. Default 50; 0 means unlimited.
	UnauthenticatedRate int `yaml:"unauthenticated_rate"`
	// UserAllocateRate is how many Allocate requests per second one user
	// (REST: the part after the expiry) may send with valid credentials,
	// with a burst of twice that or user_allocations if more; past it they
	// are answered 486, so that allocating and releasing in a loop cannot
	// take a CPU. Default 64 (a browser sends a handful a minute); 0 means
	// unlimited, and so does a user_allocations of 0 (AllocateRate).
	UserAllocateRate int `yaml:"user_allocate_rate"`
	// IdleConnectionTimeout closes a TCP or TLS connection that holds no
	// allocation (and is no RFC 6062 data connection) this long after it
	// was accepted. Default 30s; must be > 0.
	IdleConnectionTimeout time.Duration `yaml:"idle_connection_timeout"`
	// ConnectionsPerIP caps open TCP and TLS client connections per client
	// IPv4 address or IPv6 /64 (one host's share); more are closed as they
	// are accepted. Default 128; 0 means unlimited.
	ConnectionsPerIP int `yaml:"connections_per_ip"`
	// ConnectionsPerPrefix caps open TCP and TLS client connections per
	// client IPv4 /24 or IPv6 /48 together (one network's share), so that
	// one network's many addresses cannot take every connection slot.
	// Default 2048 (an eighth of connections); 0 means unlimited. Below
	// connections_per_ip it is raised to it (PrefixCaps).
	ConnectionsPerPrefix int `yaml:"connections_per_prefix"`
	// Connections caps open TCP and TLS client connections in all, so they
	// cannot take the file descriptors relay sockets need. Default 16384;
	// 0 means unlimited.
	Connections int `yaml:"connections"`
	// MaxBPS holds every allocation to this many bits per second in each
	// direction (coturn: max-bps); traffic past it, beyond a 100 ms burst,
	// is dropped and counted. SIGHUP applies a change to live allocations.
	// Default 0 (unlimited).
	MaxBPS int64 `yaml:"max_bps"`
	// UserMaxBPS overrides MaxBPS for the users named (REST: the part
	// after the expiry); 0 there means unlimited for that user. Default {}.
	UserMaxBPS map[string]int64 `yaml:"user_max_bps"`
	// TotalBPS is the relayed throughput, in bits per second both ways
	// together, past which new Allocates are answered 486 (coturn:
	// bps-capacity). Default 0 (unlimited).
	TotalBPS int64 `yaml:"total_bps"`
	// UserTotalBPS holds all of one user's allocations together to this
	// many bits per second in each direction, on top of max_bps (a user's
	// 128 allocations would otherwise get 128 × max_bps); datagrams past
	// it are dropped and counted like max_bps's, and RFC 6062 relays'
	// bytes wait. SIGHUP applies a change to live allocations. Default 0
	// (unlimited).
	UserTotalBPS int64 `yaml:"user_total_bps"`
	// UserTotalBPSOverrides overrides UserTotalBPS for the users named;
	// 0 there means unlimited for that user. Default {}.
	UserTotalBPSOverrides map[string]int64 `yaml:"user_total_bps_overrides"`
}

// Drain configures graceful shutdown (SIGTERM, SIGUSR1, first SIGINT).
type Drain struct {
	// Timeout is the longest a drain waits for allocations to end before it
	// closes them. Default 1h; 0 means no graceful period (stop at once).
	Timeout time.Duration `yaml:"timeout"`
	// Delay is a lame-duck period at the start of a drain: readiness already
	// fails but new allocations are still accepted. Default 0 (none).
	Delay time.Duration `yaml:"delay"`
	// AlternateServers ("ip:port" or "name:port") are offered with 300 Try
	// Alternate to new Allocate requests while draining, in rotation. A name
	// is resolved when the drain starts and again while it lasts: its A and
	// AAAA records count, less turnd's own and special-purpose addresses, at
	// most 16 per family. Default []; an empty list, or no address left,
	// answers 486.
	AlternateServers []string `yaml:"alternate_servers"`
	// AlternateDomain is sent as ALTERNATE-DOMAIN with a 300 over TLS, the
	// name a turns: client checks the alternate's certificate against; it
	// needs listen.tls and alternate_servers. Default "" (not sent).
	AlternateDomain string `yaml:"alternate_domain"`
}

// Handover configures upgrades without waiting: a successor process takes
// over the sockets and the allocations (docs/handover.md). `turnd upgrade
// --pid N` reaches any turnd (an abstract socket named after its PID);
// Socket is for a successor a supervisor starts (serve --take-over).
type Handover struct {
	// Socket is the Unix socket a successor started with --take-over
	// connects to; it passes to the successor with the rest. Default ""
	// (none; --take-over needs one).
	Socket string `yaml:"socket"`
	// Timeout bounds a hand-over, from the successor's hello (or start) to
	// its "serving"; past it the old process serves on as before and a
	// successor it started is killed. Default 10s.
	Timeout time.Duration `yaml:"timeout"`
	// After is what the old process does once what stayed with it (TLS
	// clients' allocations) has drained: "exit" or "wait" (for SIGTERM; a
	// Kubernetes container that exits is restarted). Default "exit".
	After string `yaml:"after"`
}

// HTTP configures the metrics and probe listener.
type HTTP struct {
	// Address is "host:port" for /metrics, /healthz, /readyz and /status.
	// Default "127.0.0.1:9641"; "" disables the listener.
	Address string `yaml:"address"`
	// AdminTokenFile is a file holding the bearer token that /sessions and
	// /sessions/disconnect require (`turnd sessions`, `turnd disconnect`).
	// It is read on every admin request, so a rotated Secret applies
	// without a restart; one every user may write is refused (503), one
	// they may read is warned about. Default "": the admin endpoints are
	// off (404).
	AdminTokenFile string `yaml:"admin_token_file"`
	// MetricsUsers are the users whose relayed traffic /metrics labels by
	// name (turnd_user_bytes_total{user,direction} and _packets_total);
	// every other user's is summed under user="other", so the series stay
	// as few as the list. Names are as in usage records (REST credentials:
	// the part after the expiry). Read at start. Default empty: no
	// per-user metrics.
	MetricsUsers []string `yaml:"metrics_users"`
}

// ServesTLS reports whether any listener speaks TLS, so a certificate is needed.
func (c Config) ServesTLS() bool { return len(c.Listen.TLS)+len(c.Listen.TCPTLS) > 0 }

// Log configures logging.
type Log struct {
	// Level is debug, info, warn or error. Default info.
	Level string `yaml:"level"`
	// Format is text or json. Default text.
	Format string `yaml:"format"`
}
