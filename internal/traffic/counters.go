// Package traffic holds the relayed traffic totals: the relay adds to them,
// the HTTP API and the metrics read them. It is a leaf so that readers need
// not import the relay's sockets; it must know nothing of sockets, HTTP or
// Prometheus.
package traffic

import "sync/atomic"

// Counters are the relayed traffic totals. ToPeer counts what clients sent
// out through relays; FromPeer what peers sent back to clients. The relay
// adds to them in batches, so the totals may trail the truth by a few
// packets per live allocation.
type Counters struct {
	ToPeerPackets   atomic.Uint64
	ToPeerBytes     atomic.Uint64
	FromPeerPackets atomic.Uint64
	FromPeerBytes   atomic.Uint64

	// DroppedToPeer and DroppedToClient count datagrams the fast path
	// could not pass on: a full socket buffer, a send error, a TCP
	// client's connection busy or full (a downlink loop never waits for
	// one client), a peer datagram too long for a Data indication, or an
	// allocation past its max_bps. Counted as they happen: they are rare.
	DroppedToPeer   atomic.Uint64
	DroppedToClient atomic.Uint64
}

// Usage is one allocation's traffic since its relay socket opened. For an
// RFC 6062 relay, packets are the reads and writes of its peer connections'
// byte streams, and RateLimited stays 0: past max_bps they wait, not drop.
type Usage struct {
	ToPeerPackets, ToPeerBytes     uint64
	FromPeerPackets, FromPeerBytes uint64
	// Permissions and Channels count the permissions and channel bindings
	// the allocation installed over its life, refreshes not counted again.
	Permissions, Channels uint64
	// RateLimited counts datagrams dropped, either way, because the
	// allocation was past its max_bps.
	RateLimited uint64
}
