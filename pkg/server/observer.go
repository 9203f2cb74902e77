package server

import (
	"github.com/turnd/turnd/internal/edge"
	"github.com/turnd/turnd/pkg/allocation"
)

// Reasons an Allocate is refused, as reported to the Observer.
const (
	RejectAuth        = "auth"         // unknown user, wrong password, expired REST credential
	RejectQuota       = "quota"        // limits.total_allocations or limits.user_allocations
	RejectDraining    = "draining"     // 486 while draining
	RejectRedirected  = "redirected"   // 300 Try Alternate while draining
	RejectTCPDisabled = "tcp_disabled" // 442: RFC 6062 relays switched off
	RejectCapacity    = "capacity"     // 508: no relay port free
	RejectRate        = "rate"         // 486: limits.user_allocate_rate

	RejectFleetQuota       = "fleet_quota"       // 486: a fleet-wide quota (limits.user_allocations, fleet.total_allocations)
	RejectFleetUnavailable = "fleet_unavailable" // 486: Redis down and fleet.on_outage refuse
)

// Reasons a CreatePermission or ChannelBind is refused.
const (
	RejectPeerDenied       = "peer_denied"
	RejectBindingsCapacity = "capacity" // permissions_per_allocation, channels_per_allocation
)

// Reasons a request is dropped unanswered.
const (
	DropRateLimited    = "rate_limited"    // limits.unauthenticated_rate
	DropBadFingerprint = "bad_fingerprint" // RFC 8489 §6.3: FINGERPRINT does not match
)

// Reasons a TCP or TLS connection is refused on accept (ConnectionRefused).
const (
	RefuseConnectionsPerIP     = edge.RefuseConnectionsPerIP     // limits.connections_per_ip
	RefuseConnectionsPerPrefix = edge.RefuseConnectionsPerPrefix // limits.connections_per_prefix
	RefuseConnections          = edge.RefuseConnections          // limits.connections
	RefuseFiveTuple            = edge.RefuseFiveTuple            // a PROXY header announced a live connection's 5-tuple
)

// Reasons a stream connection is closed at the PROXY protocol step
// (ProxyRefused).
const (
	ProxyUntrusted = edge.ProxyUntrusted // a header from a source not in listen.proxy_protocol.trusted
	ProxyMissing   = edge.ProxyMissing   // a trusted proxy's connection that does not start with a header
	ProxyMalformed = edge.ProxyMalformed // a header that does not parse
	ProxyTimeout   = edge.ProxyTimeout   // no complete header in time
)

// Observer receives what the server sees, for metrics. Methods are called on
// request paths (never per relayed packet) and must not block.
type Observer interface {
	AllocationCreated(t allocation.Transport)
	AllocationRejected(reason string)
	PermissionRejected(reason string)
	RequestDropped(reason string)
	ConnectionRefused(reason string)
	PanicRecovered()
	Reloaded(ok bool)
	// ProxyRefused counts a stream connection closed at the PROXY protocol
	// step (ProxyUntrusted, ProxyMissing, ProxyMalformed, ProxyTimeout).
	ProxyRefused(reason string)
}

// nopObserver is used when the caller passes none.
type nopObserver struct{}

func (nopObserver) AllocationCreated(allocation.Transport) {}
func (nopObserver) AllocationRejected(string)              {}
func (nopObserver) PermissionRejected(string)              {}
func (nopObserver) Reloaded(bool)                          {}
func (nopObserver) RequestDropped(string)                  {}
func (nopObserver) ConnectionRefused(string)               {}
func (nopObserver) PanicRecovered()                        {}
func (nopObserver) ProxyRefused(string)                    {}
