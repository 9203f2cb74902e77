package allocation

import (
	"net"
	"net/netip"
	"time"

	"github.com/turnd/turnd/internal/netaddr"
	"github.com/turnd/turnd/internal/traffic"
)

// Info describes one live allocation.
type Info struct {
	Client    net.Addr  // the client's transport address (5-tuple source)
	Server    net.Addr  // turnd's listening address the client reached (5-tuple destination)
	Transport Transport // client-facing transport
	User      string    // user ID from the credential check (REST: the part after the expiry)
	Realm     string
	Relay     net.Addr // relayed transport address
	Created   time.Time
	// Expires is when the allocation ends unless the client refreshes it:
	// creation or the last Refresh plus the lifetime granted.
	Expires time.Time
	// Ending is why the allocation ended (EndReason.String), empty while
	// it lives.
	Ending string

	// Tuple, Relayed and Usage are the 5-tuple, both relayed addresses
	// (index bindings.Families.Index; zero: none) and the traffic so far.
	Tuple   netaddr.FiveTuple
	Relayed [2]netip.AddrPort
	Usage   traffic.Usage
}

// Limits are the allocation quotas; zero means unlimited.
type Limits struct {
	Total   int
	PerUser int
	PerIP   int // per client address: an IPv4 address, an IPv6 /64 (clientip.Key)
	// PerPrefix is per client network, an IPv4 /24 or IPv6 /48
	// (clientip.PrefixKey), so that one network's many hosts cannot hold
	// every relay port between them.
	PerPrefix int

	// PermissionLifetime and ChannelLifetime are what Table grants
	// (limits.permission_lifetime, limits.channel_lifetime); zero: RFC
	// 8656's PermissionLifetime and ChannelLifetime.
	PermissionLifetime, ChannelLifetime time.Duration
}
