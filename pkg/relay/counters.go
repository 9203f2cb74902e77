package relay

import "sync/atomic"

// Counters are the relayed traffic totals, updated on every relayed packet.
// ToPeer counts what clients sent out through relays; FromPeer what peers
// sent back to clients.
type Counters struct {
	ToPeerPackets   atomic.Uint64
	ToPeerBytes     atomic.Uint64
	FromPeerPackets atomic.Uint64
	FromPeerBytes   atomic.Uint64
}
