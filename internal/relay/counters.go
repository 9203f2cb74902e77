package relay

import (
	"sync/atomic"

	"github.com/turnd/turnd/internal/traffic"
)

// Each relay socket tallies its own traffic and adds it to the shared
// traffic.Counters every tallyBatch packets and when it closes, so the
// totals trail the truth by less than tallyBatch packets per live
// allocation, and cores do not fight over one cache line on every packet.

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
	// perms and chans count bindings installed (not refreshed): per
	// request, not per packet.
	perms, chans atomic.Uint64
	limited      atomic.Uint64 // datagrams dropped for max_bps, both ways
}

// flow is one direction's running totals and the part already published.
type flow struct {
	pkts, bytes       atomic.Uint64
	pubPkts, pubBytes atomic.Uint64
}

// add counts one datagram of n bytes and publishes every tallyBatch.
//
// Hot path: no allocation, no lock.
func (f *flow) add(n int, pkts, bytes *atomic.Uint64) {
	f.bytes.Add(uint64(n))
	if f.pkts.Add(1)-f.pubPkts.Load() >= tallyBatch {
		f.publish(pkts, bytes)
	}
}

// publish adds what f counted since its last publication to the totals.
// Compare-and-swap, so a writer and Close publishing at once count each
// datagram once.
func (f *flow) publish(pkts, bytes *atomic.Uint64) {
	advance(&f.pkts, &f.pubPkts, pkts)
	advance(&f.bytes, &f.pubBytes, bytes)
}

func advance(running, published, total *atomic.Uint64) {
	for {
		now, old := running.Load(), published.Load()
		if now <= old {
			return
		}
		if published.CompareAndSwap(old, now) {
			total.Add(now - old)
			return
		}
	}
}

func (t *tally) toPeer(c *traffic.Counters, n int) { t.to.add(n, &c.ToPeerPackets, &c.ToPeerBytes) }

func (t *tally) fromPeer(c *traffic.Counters, n int) {
	t.from.add(n, &c.FromPeerPackets, &c.FromPeerBytes)
}

func (t *tally) flush(c *traffic.Counters) {
	t.to.publish(&c.ToPeerPackets, &c.ToPeerBytes)
	t.from.publish(&c.FromPeerPackets, &c.FromPeerBytes)
}

func (t *tally) usage() traffic.Usage {
	return traffic.Usage{
		ToPeerPackets: t.to.pkts.Load(), ToPeerBytes: t.to.bytes.Load(),
		FromPeerPackets: t.from.pkts.Load(), FromPeerBytes: t.from.bytes.Load(),
		Permissions: t.perms.Load(), Channels: t.chans.Load(), RateLimited: t.limited.Load(),
	}
}
