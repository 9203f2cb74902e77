package config

import "time"

// Default returns the built-in defaults, the ones documented on each field.
// It is the only place defaults come from: Parse decodes over it, so a key
// left out of a file keeps the value returned here. Each call returns fresh
// slices, so callers may modify the result.
//
// Auth is empty, so Default alone does not validate: a config must name at
// least one user or secret.
func Default() Config {
	return Config{
		Realm: "turnd.local",
		Listen: Listen{
			UDP: []string{"127.0.0.1:3478"},
			TCP: []string{"127.0.0.1:3478"},

			SocketBuffer: 4 << 20,
		},
		Relay: Relay{
			MinPort:        49152,
			MaxPort:        65535,
			TCPAllocations: true,
			Offload:        "off",
		},
		Auth: Auth{RESTSeparator: ":", MaxRESTValidity: 7 * 24 * time.Hour},
		Limits: Limits{
			MaxLifetime:        time.Hour,
			PermissionLifetime: 5 * time.Minute,
			ChannelLifetime:    10 * time.Minute,

			UserAllocations:          128,
			IPAllocations:            256,
			PrefixAllocations:        2048,
			ConnectionsPerIP:         128,
			ConnectionsPerPrefix:     2048,
			Connections:              16384,
			PermissionsPerAllocation: 64,
			ChannelsPerAllocation:    64,
			UnauthenticatedRate:      50,
			UserAllocateRate:         64,
			IdleConnectionTimeout:    30 * time.Second,
		},
		Drain:    Drain{Timeout: time.Hour},
		Handover: Handover{Timeout: 10 * time.Second, After: "exit"},
		HTTP:     HTTP{Address: "127.0.0.1:9641"},
		Log:      Log{Level: "info", Format: "text"},
		Fleet: Fleet{Prefix: "turnd:", Lease: 10 * time.Second, Timeout: 250 * time.Millisecond, OnOutage: "local",
			Credentials: FleetCredentials{TTL: time.Hour, Nodes: 3}},
	}
}
