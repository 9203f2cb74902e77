package relay

import (
	"sync/atomic"

	"github.com/turnd/turnd/internal/traffic"
)

// Each relay socket tallies its own traffic and adds it to the shared
// traffic.Counters every tallyBatch packets and when it closes, so the
// totals trail the truth by less than tallyBatch packets per live
// allocation, and cores do not fight over one cache line on every packet.
// Drops that come a packet at a time (junk from peers without a
// permission, traffic past a rate) are tallied the same way; the rare ones
// go straight to the totals (Conn.dropTo, Conn.dropFrom).

// tallyBatch is how many packets a socket counts before publishing.
const tallyBatch = 32

// tally is one socket's traffic since it opened: the allocation's usage
// record reads it whole, and the shared Counters get what it has not yet
// published. Each direction has a single writer at a time (pion's read loop
// for one, the lane's read loop or pion's handler for the other), but both
// directions may publish at Close, so the fields are atomics — uncontended,
// hence cheap.
type tally struct {
	to, from flow
	// header is the IP and UDP header of one datagram on the relay
	// socket (28 or 48 bytes; 0 for RFC 6062 relays), for HeaderBytes.
	header uint64
	// unpermitted counts peers' datagrams with neither a permission nor
	// a channel; limitedTo and limitedFrom those past a rate.
	unpermitted, limitedTo, limitedFrom flow
	// perms and chans count bindings installed (not refreshed): per
	// request, not per packet.
	perms, chans atomic.Uint64
}

// flow is one direction's running totals and the part already published.
type flow struct {
	pkts, bytes       atomic.Uint64
	pubPkts, pubBytes atomic.Uint64
}

// sink is where a flow publishes: the shared packet and byte totals, and
// the header bytes per packet of relayed traffic (headers nil: none).
type sink struct {
	pkts, bytes, headers *atomic.Uint64
	header               uint64
}

// add counts pkts datagrams of bytes in all and publishes every tallyBatch
// packets.
//
// Hot path: no allocation, no lock.
func (f *flow) add(pkts, bytes int, to sink) {
	f.bytes.Add(uint64(bytes))
	if f.pkts.Add(uint64(pkts))-f.pubPkts.Load() >= tallyBatch {
		f.publish(to)
	}
}

// publish adds what f counted since its last publication to the totals.
// Compare-and-swap, so a writer and Close publishing at once count each
// datagram once.
func (f *flow) publish(to sink) {
	if n := advance(&f.pkts, &f.pubPkts, to.pkts); n > 0 && to.headers != nil {
		to.headers.Add(n * to.header)
	}
	advance(&f.bytes, &f.pubBytes, to.bytes)
}

// advance adds running's increase since published to total and returns it.
func advance(running, published, total *atomic.Uint64) uint64 {
	for {
		now, old := running.Load(), published.Load()
		if now <= old {
			return 0
		}
		if published.CompareAndSwap(old, now) {
			total.Add(now - old)
			return now - old
		}
	}
}

func (t *tally) toSink(c *traffic.Counters) sink {
	return sink{pkts: &c.ToPeerPackets, bytes: &c.ToPeerBytes, headers: &c.HeaderBytes, header: t.header}
}

func (t *tally) fromSink(c *traffic.Counters) sink {
	return sink{pkts: &c.FromPeerPackets, bytes: &c.FromPeerBytes, headers: &c.HeaderBytes, header: t.header}
}

func dropSink(d *traffic.Drops) sink { return sink{pkts: &d.Packets, bytes: &d.Bytes} }

// toPeer counts a datagram of n bytes relayed to a peer.
func (t *tally) toPeer(c *traffic.Counters, n int) { t.to.add(1, n, t.toSink(c)) }

// fromPeer counts pkts datagrams of bytes in all relayed to the client.
func (t *tally) fromPeer(c *traffic.Counters, pkts, bytes int) {
	t.from.add(pkts, bytes, t.fromSink(c))
}

// unpermittedFrom counts a peer's datagram of n bytes discarded for want
// of a permission or channel.
func (t *tally) unpermittedFrom(c *traffic.Counters, n int) {
	t.unpermitted.add(1, n, dropSink(&c.DroppedToClient[traffic.NoPermission]))
}

// limited counts a datagram of n bytes dropped past a rate, toward the
// peer or toward the client.
func (t *tally) limited(c *traffic.Counters, toPeer bool, n int) {
	if toPeer {
		t.limitedTo.add(1, n, dropSink(&c.DroppedToPeer[traffic.RateLimited]))
		return
	}
	t.limitedFrom.add(1, n, dropSink(&c.DroppedToClient[traffic.RateLimited]))
}

// flush publishes everything not yet published.
func (t *tally) flush(c *traffic.Counters) {
	t.to.publish(t.toSink(c))
	t.from.publish(t.fromSink(c))
	t.unpermitted.publish(dropSink(&c.DroppedToClient[traffic.NoPermission]))
	t.limitedTo.publish(dropSink(&c.DroppedToPeer[traffic.RateLimited]))
	t.limitedFrom.publish(dropSink(&c.DroppedToClient[traffic.RateLimited]))
}

func (t *tally) usage() traffic.Usage {
	return traffic.Usage{
		ToPeerPackets: t.to.pkts.Load(), ToPeerBytes: t.to.bytes.Load(),
		FromPeerPackets: t.from.pkts.Load(), FromPeerBytes: t.from.bytes.Load(),
		Permissions: t.perms.Load(), Channels: t.chans.Load(),
		RateLimited:  t.limitedTo.pkts.Load() + t.limitedFrom.pkts.Load(),
		NoPermission: t.unpermitted.pkts.Load(),
	}
}
