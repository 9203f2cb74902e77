// Package traffic holds the relayed traffic totals: the relay adds to them,
// the HTTP API and the metrics read them. It is a leaf so that readers need
// not import the relay's sockets; it must know nothing of sockets, HTTP or
// Prometheus.
package traffic

import "sync/atomic"

// Counters are the relayed traffic totals. ToPeer counts what clients sent
// out through relays; FromPeer what peers sent back to clients: datagrams
// relayed only, never those dropped, but for those a batched send to UDP
// clients loses in the kernel (it reports how many, not which), counted in
// SendError too. The relay adds to them in batches, so
// the totals may trail the truth by a few packets per live allocation.
type Counters struct {
	ToPeerPackets   atomic.Uint64
	ToPeerBytes     atomic.Uint64
	FromPeerPackets atomic.Uint64
	FromPeerBytes   atomic.Uint64
	// HeaderBytes counts the IP and UDP headers of the datagrams relayed
	// both ways (28 bytes each over IPv4, 48 over IPv6): with the payload
	// bytes, what the relay sockets moved on the wire (limits.total_bps).
	HeaderBytes atomic.Uint64

	// DroppedToPeer and DroppedToClient count the datagrams the relay did
	// not pass on, and their payload bytes, by Reason.
	DroppedToPeer, DroppedToClient [NumReasons]Drops

	// PeerConnsRefused counts the peer connections to RFC 6062 relay ports
	// closed on accept, before the client was offered them, by
	// PeerRefusal.
	PeerConnsRefused [NumPeerRefusals]atomic.Uint64

	// Kernel is the part of the relayed totals above that the kernel fast
	// path relayed (relay.offload), and KernelChannels the channels it
	// holds now.
	Kernel         Relayed
	KernelChannels atomic.Int64

	// settle folds counts kept outside these totals (the kernel path's
	// per-CPU counters) into them; nil: none.
	settle atomic.Pointer[func()]
}

// Relayed counts datagrams relayed each way and their payload bytes.
type Relayed struct {
	ToPeerPackets, ToPeerBytes     atomic.Uint64
	ToClientPackets, ToClientBytes atomic.Uint64
}

// SetSettle makes f what Settle runs.
func (c *Counters) SetSettle(f func()) { c.settle.Store(&f) }

// Settle brings the totals, and every allocation's Tally, up to date with
// the counts kept elsewhere. A reader that must be exact (a usage record,
// /status, a scrape) calls it first.
func (c *Counters) Settle() {
	if f := c.settle.Load(); f != nil {
		(*f)()
	}
}

// Drops counts the datagrams dropped for one reason one way.
type Drops struct {
	Packets, Bytes atomic.Uint64
}

// Reason is why the relay dropped a datagram.
type Reason uint8

const (
	// NoPermission: a peer's datagram with neither a permission nor a
	// channel for it (RFC 8656 §11.3: discard), junk at a relay port.
	NoPermission Reason = iota
	// RateLimited: past the allocation's limits.max_bps or its user's
	// limits.user_total_bps.
	RateLimited
	// TooLong: a peer datagram too long for a Data indication's 16-bit
	// length, or for the buffer of the read loop serving a TLS client.
	TooLong
	// ClientBusy: a TCP client's connection was busy or full (a downlink
	// loop never waits for one client).
	ClientBusy
	// SendError: the kernel refused the datagram (a full socket buffer, an
	// unreachable address).
	SendError
	// ForbiddenPeer: sent to one of turnd's own sockets, to port 0, or to a
	// peer a reload denied.
	ForbiddenPeer
	// NumReasons is how many reasons there are.
	NumReasons
)

// String is the reason as a metric label.
func (r Reason) String() string {
	switch r {
	case NoPermission:
		return "no_permission"
	case RateLimited:
		return "rate_limited"
	case TooLong:
		return "too_long"
	case ClientBusy:
		return "client_busy"
	case SendError:
		return "send_error"
	case ForbiddenPeer:
		return "forbidden_peer"
	}
	return "unknown"
}

// Reasons lists the reasons a datagram may be dropped for one way.
func Reasons(toPeer bool) []Reason {
	if toPeer {
		return []Reason{RateLimited, SendError, ForbiddenPeer}
	}
	return []Reason{NoPermission, RateLimited, TooLong, ClientBusy, SendError}
}

// PeerRefusal is why the relay closed a peer's connection to an RFC 6062
// relay port on accept.
type PeerRefusal uint8

const (
	// PeerNoPermission: the allocation has no permission for the peer's IP.
	PeerNoPermission PeerRefusal = iota
	// PeerForbidden: one of turnd's own sockets, or a peer a reload denied.
	PeerForbidden
	// PeerPendingLimit: the allocation's connections dialling or waiting
	// for their ConnectionBind are at their bound.
	PeerPendingLimit
	// NumPeerRefusals is how many refusals there are.
	NumPeerRefusals
)

// String is the refusal as a metric label.
func (r PeerRefusal) String() string {
	switch r {
	case PeerNoPermission:
		return "no_permission"
	case PeerForbidden:
		return "forbidden_peer"
	case PeerPendingLimit:
		return "pending_limit"
	}
	return "unknown"
}

// Usage is one allocation's traffic since its relay socket opened: what
// it relayed, and apart from it what it dropped. For an RFC 6062 relay,
// packets are the reads and writes of its peer connections' byte streams,
// and RateLimited stays 0: past max_bps they wait, not drop.
type Usage struct {
	ToPeerPackets, ToPeerBytes     uint64
	FromPeerPackets, FromPeerBytes uint64
	// Permissions and Channels count the permissions and channel bindings
	// the allocation installed over its life, refreshes not counted again.
	Permissions, Channels uint64
	// RateLimited counts datagrams dropped, either way, because the
	// allocation was past its max_bps or its user past user_total_bps.
	RateLimited uint64
	// NoPermission counts peers' datagrams discarded because the
	// allocation had neither a permission nor a channel for them.
	NoPermission uint64
}
