package relay

import "sync/atomic"

// Counters are the relayed traffic totals. ToPeer counts what clients sent
// out through relays; FromPeer what peers sent back to clients. Each relay
// socket tallies its own traffic and adds it here every tallyBatch packets
// and when it closes, so the totals trail the truth by less than tallyBatch
// packets per live allocation, and cores do not fight over one cache line
// on every packet.
type Counters struct {
	ToPeerPackets   atomic.Uint64
	ToPeerBytes     atomic.Uint64
	FromPeerPackets atomic.Uint64
	FromPeerBytes   atomic.Uint64

	// DroppedToPeer and DroppedToClient count datagrams the fast path
	// could not pass on: a full socket buffer, a send error, a TCP
	// client's connection busy or full (a downlink loop never waits for
	// one client), or a peer datagram too long for a Data indication.
	// Counted as they happen: they are rare.
	DroppedToPeer   atomic.Uint64
	DroppedToClient atomic.Uint64
}

// tallyBatch is how many packets a socket counts before publishing.
const tallyBatch = 32

// tally is one socket's unpublished traffic. Each direction has a single
// writer at a time (pion's read loop for one, the lane's read loop or pion's
// handler for the other), but both directions may flush at Close, so the
// fields are atomics — uncontended, hence cheap.
type tally struct {
	toPkts, toBytes     atomic.Uint64
	fromPkts, fromBytes atomic.Uint64
}

func (t *tally) toPeer(c *Counters, n int) {
	t.toBytes.Add(uint64(n))
	if t.toPkts.Add(1) >= tallyBatch {
		c.ToPeerPackets.Add(t.toPkts.Swap(0))
		c.ToPeerBytes.Add(t.toBytes.Swap(0))
	}
}

func (t *tally) fromPeer(c *Counters, n int) {
	t.fromBytes.Add(uint64(n))
	if t.fromPkts.Add(1) >= tallyBatch {
		c.FromPeerPackets.Add(t.fromPkts.Swap(0))
		c.FromPeerBytes.Add(t.fromBytes.Swap(0))
	}
}

func (t *tally) flush(c *Counters) {
	c.ToPeerPackets.Add(t.toPkts.Swap(0))
	c.ToPeerBytes.Add(t.toBytes.Swap(0))
	c.FromPeerPackets.Add(t.fromPkts.Swap(0))
	c.FromPeerBytes.Add(t.fromBytes.Swap(0))
}
