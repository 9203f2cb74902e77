package turn

import (
	"net/netip"

	"github.com/turnd/turnd/internal/traffic"
	"github.com/turnd/turnd/pkg/allocation"
)

// Reasons a request is refused, as passed to Events.Refused (the values of
// pkg/server's Observer).
const (
	RefusedAuth        = "auth"         // unknown user, wrong password, expired REST credential
	RefusedQuota       = "quota"        // an allocation quota of the table
	RefusedDraining    = "draining"     // 486: the table does not admit
	RefusedRedirected  = "redirected"   // 300 Try Alternate while not admitting
	RefusedTCPDisabled = "tcp_disabled" // 442: RFC 6062 relays switched off
	RefusedCapacity    = "capacity"     // 508: no relay port, or a permission, channel or Connect cap
	RefusedRate        = "rate"         // 486: limits.user_allocate_rate
	RefusedBandwidth   = "bandwidth"    // 486: limits.total_bps
	RefusedPeerDenied  = "peer_denied"  // 403: the peer filter or turnd's own socket

	RefusedFleetQuota       = "fleet_quota"       // 486: the Admission's quota (ErrAdmissionQuota)
	RefusedFleetUnavailable = "fleet_unavailable" // 486: the Admission could not decide (ErrAdmissionUnavailable)
)

// Reasons a message is dropped unanswered, as passed to Events.Dropped.
const (
	DropRateLimited    = "rate_limited"    // limits.unauthenticated_rate
	DropBadFingerprint = "bad_fingerprint" // RFC 8489 §6.3: FINGERPRINT does not match
	DropMalformed      = "malformed"       // a request that does not decode
	DropIndication     = "indication"      // an indication other than Send, or a response
	DropSend           = "send"            // a Send the fast path did not take
)

// Events receives what the handlers decide that is worth a metric or a log
// line. Methods are called on request paths and must not block.
type Events interface {
	// Refused is called after an answer refusing a request for reason
	// (Refused*), with the user it was signed by ("" when unknown).
	Refused(method, reason, user string, client netip.AddrPort)
	// Dropped is called for a message dropped unanswered (Drop*).
	Dropped(reason string)
	// ChannelBound is called for every ChannelBind granted (a new channel
	// or a refresh), after the table holds it.
	ChannelBound(a *allocation.Allocation, number uint16, peer netip.AddrPort)
	// Created is called for every allocation made, after it is in the table.
	Created(a *allocation.Allocation)
	// Ended is called once for every allocation that ended, with its
	// counters (the usage record).
	Ended(a *allocation.Allocation, why allocation.EndReason, u traffic.Usage)
}

// nopEvents is the Events of a Handler given none.
type nopEvents struct{}

func (nopEvents) Refused(string, string, string, netip.AddrPort)                    {}
func (nopEvents) Dropped(string)                                                    {}
func (nopEvents) ChannelBound(*allocation.Allocation, uint16, netip.AddrPort)       {}
func (nopEvents) Created(*allocation.Allocation)                                    {}
func (nopEvents) Ended(*allocation.Allocation, allocation.EndReason, traffic.Usage) {}
