package gate

import (
	"net"
	"net/netip"
	"time"
)

// Policy is the live configuration the gate applies. The server swaps it
// atomically on reload; a Policy is never modified after it is handed over.
type Policy struct {
	// Keys returns the user ID and the candidate long-term keys for a
	// username (several for TURN REST with several secrets).
	Keys func(username, realm string) (userID string, keys [][]byte, err error)
	// MultiKey is true when some usernames have more than one candidate
	// key, so every authenticated request must be matched to its key.
	MultiKey bool
	// TCPAllocations allows RFC 6062 TCP relays; false answers 442.
	TCPAllocations bool
	// MaxLifetime caps requested allocation lifetimes; 0: no cap.
	MaxLifetime time.Duration
	// DefaultLifetime is granted to an Allocate or Refresh asking for less,
	// 0 on an Allocate included (RFC 8656 §7.2, §8.2); a Refresh asking for
	// 0 still deletes. It must not exceed MaxLifetime. 0: pion's way (any
	// value under an hour is honoured, and 0 fails an Allocate with 508).
	DefaultLifetime time.Duration
	// RelayFamily reports whether turnd has a relay address of the family
	// (v6 or not): an Allocate asking for another is answered 440 Address
	// Family not Supported (RFC 8656 §7.2). nil: pion's way (508).
	RelayFamily func(v6 bool) bool
	// Alternates returns the servers offered with 300 Try Alternate while
	// not accepting, as they are now (names are resolved while a drain
	// lasts). nil, or an empty answer, lets pion answer 486 instead.
	Alternates func() []*net.UDPAddr
	// AlternateDomain, if not empty, goes with a 300 sent over TLS as
	// ALTERNATE-DOMAIN (RFC 8489 §14.16): the name the client checks the
	// alternate's certificate against.
	AlternateDomain string
	// PeerAllowed is the peer filter. The gate applies it to ChannelBind,
	// which pion refuses with 401 (that reads as bad credentials) where
	// RFC 8656 §12.2 wants 403; nil lets every peer through to pion.
	PeerAllowed func(net.IP) bool
	// UnauthenticatedRate bounds the requests whose MESSAGE-INTEGRITY the
	// gate could not verify (none, SHA256 only, junk, unknown user), STUN
	// Binding and requests with a bad FINGERPRINT, per client IPv4 address
	// or IPv6 /64 per second, with a burst of twice that; excess requests
	// are dropped unanswered. 0: no limit.
	UnauthenticatedRate int
	// UserAllocateRate bounds the authenticated Allocate requests of one
	// user (the user ID Keys returns) per second, with a burst of
	// UserAllocateBurst (0: twice the rate); past it they are answered 486
	// Allocation Quota Reached, signed. 0: no limit.
	UserAllocateRate, UserAllocateBurst int
	// Bindings counts an allocation's permissions and channels; with the
	// two limits it caps them (508 Insufficient Capacity). nil: no caps.
	Bindings Bindings
	// PermissionsPerAllocation and ChannelsPerAllocation are those caps; 0: none.
	PermissionsPerAllocation, ChannelsPerAllocation int
	// HasAllocation reports whether a client 5-tuple holds an allocation.
	// Refresh, CreatePermission and ChannelBind without one are answered
	// 437 Allocation Mismatch (RFC 8656 §7.3, §9.2, §11.2), where pion
	// stays silent and the client retransmits until it gives up. nil: pion's way.
	HasAllocation func(client, server net.Addr) bool
	// AllocationUser returns the user ID that created a client 5-tuple's
	// allocation. Refresh, CreatePermission, ChannelBind and Connect signed
	// by another user are answered 441 Wrong Credentials (RFC 8656 §5),
	// where pion stays silent. nil: pion's way.
	AllocationUser func(client, server net.Addr) (user string, ok bool)
	// RefuseUnknownMethods answers a request for a method turnd does not
	// serve with 400 Bad Request (unsigned: nobody is authenticated for an
	// unknown method), where pion stays silent. false: pion's way.
	RefuseUnknownMethods bool
	// OwnAddress reports whether a peer transport address is one of the
	// server's own listening or HTTP sockets: a ChannelBind there would make
	// turnd relay into itself, and is refused with 403. nil: none known.
	OwnAddress func(netip.AddrPort) bool
	// TCPRelay reports whether the allocation of a client 5-tuple is an
	// RFC 6062 TCP relay, and whether its pending Connects (being dialled
	// or waiting for their ConnectionBind) are at the relay's cap, which
	// the gate answers 508 Insufficient Capacity. A Connect on any other
	// allocation is answered 400. nil: every allocation counts as one,
	// never full.
	TCPRelay func(client, server net.Addr) (full, ok bool)
	// IdleTimeout closes a TCP/TLS connection that holds no allocation (see
	// edge.Edge.Allocated) this long after it was accepted; 0: never.
	IdleTimeout time.Duration
}

// Bindings is what the gate needs to know about a client's allocation to
// cap its permissions and channels. ok is false when the client holds no
// allocation the fast path knows (pion then answers as usual).
type Bindings interface {
	Permissions(client, server net.Addr) (n int, has func(netip.Addr) bool, ok bool)
	Channels(client, server net.Addr) (n int, has func(uint16) bool, ok bool)
}

// Hooks connect the gate to the rest of turnd; every field may be nil.
type Hooks struct {
	// Accepting reports whether new allocations are taken (false while draining).
	Accepting func() bool
	// Redirected is called after a 300 Try Alternate was sent.
	Redirected func(user string, alternate *net.UDPAddr)
	// TCPRefused is called after a 442 for a refused TCP allocation.
	TCPRefused func(user string)
	// PeerRefused is called after a 403 for a ChannelBind to a denied peer.
	PeerRefused func(user string, peer net.IP)
	// RateLimited is called for every request dropped by the rate limit.
	RateLimited func(src net.Addr)
	// BadFingerprint is called for every request dropped because its
	// FINGERPRINT did not match (RFC 8489 §6.3).
	BadFingerprint func(src net.Addr)
	// ReservationRefused is called after a 486 for an EVEN-PORT reservation
	// past the per-user cap.
	ReservationRefused func(user string)
	// AllocateRateLimited is called after a 486 for an Allocate past the
	// user's UserAllocateRate.
	AllocateRateLimited func(user string)
	// CapacityRefused is called after a 508 for a permission, channel or
	// pending Connect past its cap.
	CapacityRefused func(user string)
	// Granted is called with the lifetime pion granted an allocation in a
	// successful Allocate or Refresh (0: the allocation ends now).
	Granted func(client, server net.Addr, lifetime time.Duration)
	// Releasing is called for an authenticated Refresh asking for lifetime
	// 0 (RFC 8656 §8.2: the client ends its allocation), before pion
	// handles it.
	Releasing func(client, server net.Addr)
	// Now is the clock of the per-user Allocate rate (nil: time.Now).
	Now func() time.Time
}
