package traffic

import "sync/atomic"

// Each relay socket tallies its own traffic and adds it to the shared
// Counters every TallyBatch packets and when it closes, so the
// totals trail the truth by less than TallyBatch packets per live
// allocation, and cores do not fight over one cache line on every packet.
// Drops that come a packet at a time (junk from peers without a
// permission, traffic past a rate) are tallied the same way; the rare ones
// go straight to the totals.

// TallyBatch is how many packets a socket counts before publishing.
const TallyBatch = 32

// Tally is one allocation's traffic since it opened: the allocation's usage
// record reads it whole, and the shared Counters get what it has not yet
// published. Each direction has a single writer at a time, but both
// directions may publish at Close, so the fields are atomics — uncontended,
// hence cheap.
type Tally struct {
	to, from flow
	// Header is the IP and UDP header of one datagram on the relay
	// socket (28 or 48 bytes; 0 for RFC 6062 relays), for HeaderBytes;
	// set before the first packet.
	Header uint64
	// to6 and from6 count the IPv6 socket of an allocation that may have
	// relays of both families, whose datagrams carry Header6 instead.
	to6, from6 flow
	Header6    uint64
	// unpermitted counts peers' datagrams with neither a permission nor
	// a channel; limitedTo and limitedFrom those past a rate.
	unpermitted, limitedTo, limitedFrom flow
	// perms and chans count bindings installed (not refreshed): per
	// request, not per packet.
	perms, chans atomic.Uint64
}

// CountPermission counts a permission installed (not refreshed).
func (t *Tally) CountPermission() { t.perms.Add(1) }

// CountChannel counts a channel binding installed (not refreshed).
func (t *Tally) CountChannel() { t.chans.Add(1) }

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

// add counts pkts datagrams of bytes in all and publishes every TallyBatch
// packets.
//
// Hot path: no allocation, no lock.
func (f *flow) add(pkts, bytes int, to sink) {
	f.bytes.Add(uint64(bytes))
	if f.pkts.Add(uint64(pkts))-f.pubPkts.Load() >= TallyBatch {
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

func (t *Tally) toSink(c *Counters) sink {
	return sink{pkts: &c.ToPeerPackets, bytes: &c.ToPeerBytes, headers: &c.HeaderBytes, header: t.Header}
}

func (t *Tally) fromSink(c *Counters) sink {
	return sink{pkts: &c.FromPeerPackets, bytes: &c.FromPeerBytes, headers: &c.HeaderBytes, header: t.Header}
}

func dropSink(d *Drops) sink { return sink{pkts: &d.Packets, bytes: &d.Bytes} }

// ToPeer counts a datagram of n bytes relayed to a peer.
func (t *Tally) ToPeer(c *Counters, n int) { t.to.add(1, n, t.toSink(c)) }

// FromPeer counts pkts datagrams of bytes in all relayed to the client.
func (t *Tally) FromPeer(c *Counters, pkts, bytes int) {
	t.from.add(pkts, bytes, t.fromSink(c))
}

// ToPeer6 is ToPeer on the IPv6 relay of an allocation with Header6.
func (t *Tally) ToPeer6(c *Counters, n int) { t.to6.add(1, n, t.toSink6(c)) }

// FromPeer6 is FromPeer on the IPv6 relay of an allocation with Header6.
func (t *Tally) FromPeer6(c *Counters, pkts, bytes int) {
	t.from6.add(pkts, bytes, t.fromSink6(c))
}

func (t *Tally) toSink6(c *Counters) sink {
	return sink{pkts: &c.ToPeerPackets, bytes: &c.ToPeerBytes, headers: &c.HeaderBytes, header: t.Header6}
}

func (t *Tally) fromSink6(c *Counters) sink {
	return sink{pkts: &c.FromPeerPackets, bytes: &c.FromPeerBytes, headers: &c.HeaderBytes, header: t.Header6}
}

// Kernel counts what the kernel fast path relayed through the relay socket
// (six: the IPv6 one of a route that has both) since the last call: as
// relayed traffic, and in c.Kernel too. It publishes at once (a fold is
// rare), so that Counters are exact after a Settle.
func (t *Tally) Kernel(c *Counters, six bool, toPkts, toBytes, fromPkts, fromBytes uint64) {
	to, from, toSink, fromSink := &t.to, &t.from, t.toSink(c), t.fromSink(c)
	if six {
		to, from, toSink, fromSink = &t.to6, &t.from6, t.toSink6(c), t.fromSink6(c)
	}
	if toPkts > 0 {
		to.add(int(toPkts), int(toBytes), toSink)
		to.publish(toSink)
		c.Kernel.ToPeerPackets.Add(toPkts)
		c.Kernel.ToPeerBytes.Add(toBytes)
	}
	if fromPkts > 0 {
		from.add(int(fromPkts), int(fromBytes), fromSink)
		from.publish(fromSink)
		c.Kernel.ToClientPackets.Add(fromPkts)
		c.Kernel.ToClientBytes.Add(fromBytes)
	}
}

// UnpermittedFrom counts a peer's datagram of n bytes discarded for want
// of a permission or channel.
func (t *Tally) UnpermittedFrom(c *Counters, n int) {
	t.unpermitted.add(1, n, dropSink(&c.DroppedToClient[NoPermission]))
}

// Limited counts a datagram of n bytes dropped past a rate, toward the
// peer or toward the client.
func (t *Tally) Limited(c *Counters, toPeer bool, n int) {
	if toPeer {
		t.limitedTo.add(1, n, dropSink(&c.DroppedToPeer[RateLimited]))
		return
	}
	t.limitedFrom.add(1, n, dropSink(&c.DroppedToClient[RateLimited]))
}

// Flush publishes everything not yet published.
func (t *Tally) Flush(c *Counters) {
	t.to.publish(t.toSink(c))
	t.from.publish(t.fromSink(c))
	t.to6.publish(t.toSink6(c))
	t.from6.publish(t.fromSink6(c))
	t.unpermitted.publish(dropSink(&c.DroppedToClient[NoPermission]))
	t.limitedTo.publish(dropSink(&c.DroppedToPeer[RateLimited]))
	t.limitedFrom.publish(dropSink(&c.DroppedToClient[RateLimited]))
}

// Usage is what the tally counted since it began.
func (t *Tally) Usage() Usage {
	return Usage{
		ToPeerPackets: t.to.pkts.Load() + t.to6.pkts.Load(), ToPeerBytes: t.to.bytes.Load() + t.to6.bytes.Load(),
		FromPeerPackets: t.from.pkts.Load() + t.from6.pkts.Load(),
		FromPeerBytes:   t.from.bytes.Load() + t.from6.bytes.Load(),
		Permissions:     t.perms.Load(), Channels: t.chans.Load(),
		RateLimited:  t.limitedTo.pkts.Load() + t.limitedFrom.pkts.Load(),
		NoPermission: t.unpermitted.pkts.Load(),
	}
}
