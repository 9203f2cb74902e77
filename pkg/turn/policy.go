package turn

import (
	"net/netip"
	"time"

	"github.com/turnd/turnd/internal/auth"
	"github.com/turnd/turnd/internal/bindings"
)

// Policy is the configuration the handlers apply, built by pkg/server from
// one config snapshot. It is never modified once handed to New or
// SetPolicy: a reload hands over a new one.
type Policy struct {
	// Creds turns a USERNAME and REALM into candidate keys; its realm is the
	// one every challenge names. Required.
	Creds *auth.Store
	// Peer reports whether a peer may be reached: the peer filter, and not
	// one of turnd's own sockets. nil: every peer.
	Peer func(netip.AddrPort) bool
	// DefaultLifetime is granted to an Allocate or Refresh asking for less
	// (0 on an Allocate included); MaxLifetime caps what may be asked, and
	// is granted exactly when asked (RFC 8656 §7.2, §8.2). Zero: no bound.
	DefaultLifetime, MaxLifetime time.Duration
	// Families are the families turnd has relay addresses of.
	Families bindings.Families
	// TCPAllocations allows RFC 6062 TCP relays; false answers 442.
	TCPAllocations bool
	// PermissionsPerAllocation and ChannelsPerAllocation cap an
	// allocation's permissions and channels (508); 0: no cap.
	PermissionsPerAllocation, ChannelsPerAllocation int
	// MaxPendingConnects caps an RFC 6062 allocation's Connects that wait
	// for their peer or their ConnectionBind (508); 0: no cap.
	MaxPendingConnects int
	// OverCapacity reports whether limits.total_bps is spent, so new
	// allocations are refused (486). nil: never.
	OverCapacity func() bool
	// Alternates returns the servers a 300 Try Alternate offers while the
	// table does not admit (names are resolved while a drain lasts). nil,
	// or an empty answer: 486 instead.
	Alternates func() []netip.AddrPort
	// AlternateDomain, if set, goes with a 300 sent over TLS as
	// ALTERNATE-DOMAIN (RFC 8489 §14.16).
	AlternateDomain string
	// UnauthenticatedRate bounds, per client IPv4 address or IPv6 /64 and
	// second, the answers given without a verified MESSAGE-INTEGRITY
	// (challenges, Binding, refusals of bad credentials) with a burst of
	// twice that; past it the requests are dropped unanswered. 0: no limit.
	UnauthenticatedRate int
	// UserAllocateRate bounds one user's authenticated Allocates per
	// second, with a burst of UserAllocateBurst (0: twice the rate); past
	// it they are answered 486. 0: no limit.
	UserAllocateRate, UserAllocateBurst int
}
