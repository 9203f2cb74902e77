package relay

import (
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"

	"github.com/turnd/turnd/internal/bindings"
	"github.com/turnd/turnd/internal/mmsg"
	"github.com/turnd/turnd/internal/netaddr"
	"github.com/turnd/turnd/internal/traffic"
	"github.com/turnd/turnd/internal/wire"
)

// Conn is one relay socket of a UDP allocation (one per family), read by a
// downlink loop: a peer datagram on a bound channel goes straight back to
// the client as ChannelData (or a Data indication with a permission),
// without a heap allocation; the uplink sends the client's data through it
// (relayUp).
type Conn struct {
	*mmsg.Socket // out of the runtime's poller: see mmsg.Socket
	relay        *Relay
	key          liveKey
	lane         *mmsg.Socket // the client-facing socket of the allocation's lane; nil for stream clients
	// route holds the allocation's permissions, channels and tally, which
	// the table writes and the fast paths read; client points at
	// route.Client (the store publishes the Client written before it).
	route  *bindings.Route
	client atomic.Pointer[bindings.Client]
	// six: the IPv6 socket of its route, whose tally is apart
	// (Tally.Header6).
	six   bool
	txids *rand.PCG // Data indication transaction IDs; the downlink loop's alone
	head  int       // bytes in front of the payload when reading: the larger header
	once  sync.Once

	// loop is the downlink loop that reads the socket (see downlink.go).
	loop     *downlink
	readPass uint32 // the loop's pass that last read the socket (the loop's alone)

	fd       int32 // the socket's descriptor, for the fast paths' raw system calls
	fdMu     sync.RWMutex
	fdClosed bool

	// toRate and fromRate hold each direction to limits.max_bps and
	// limits.user_total_bps: the allocation's, which both relay sockets of
	// a dual-stack route share.
	toRate, fromRate *limit

	kern atomic.Pointer[kroute] // the kernel path's share of the route; nil: user space only
}

// routed reports whether a peer's datagram has somewhere to go: a channel
// or a permission (RFC 8656 §11.3).
func (c *Conn) routed(from netip.AddrPort) bool {
	from = netaddr.Unmap(from)
	if _, ok := c.route.Number(from); ok {
		return true
	}
	return c.route.Permitted(from.Addr())
}

// discard counts a peer's datagram of n bytes that cannot be relayed
// whole: junk if nothing permits its sender, else too long.
func (c *Conn) discard(from netip.AddrPort, n int) {
	if !c.routed(from) {
		c.route.Usage.UnpermittedFrom(c.relay.opts.Counters, n)
		return
	}
	c.dropFrom(traffic.TooLong, n)
}

// frameDown turns a peer's datagram (at p[off:off+n]) into what its client
// receives, in place: ChannelData on a bound channel, or a Data indication
// if the peer has a permission. It is not relayed (false) if the peer has
// neither (traffic.NoPermission: RFC 8656 §11.3 says discard), or if the
// datagram does not fit a Data indication's 16-bit length
// (traffic.TooLong: a wrapped length would let the peer's bytes be read as
// frames of the client's stream). A ChannelData length always fits a UDP
// payload. off must leave room for the larger header.
//
// Hot path: no allocation.
func (c *Conn) frameDown(p []byte, off, n int, from netip.AddrPort, stream bool) ([]byte, traffic.Reason, bool) {
	from = netaddr.Unmap(from)
	if num, ok := c.route.Number(from); ok {
		wire.PutChannelDataHeader(p[off-4:off], num, n)
		end := off + n
		if stream { // RFC 8656 §12.5: padded to 4 bytes on streams
			pad := (4 - n%4) % 4
			clear(p[end : end+pad])
			end += pad
		}
		return p[off-4 : end], 0, true
	}
	if !c.route.Permitted(from.Addr()) {
		return nil, traffic.NoPermission, false
	}
	head := wire.DataIndicationHead4
	if !from.Addr().Is4() {
		head = wire.DataIndicationHead6
	}
	if head-wire.HeaderSize+n > wire.MaxBody {
		return nil, traffic.TooLong, false
	}
	start := off - head
	var txid [12]byte
	binary.BigEndian.PutUint64(txid[0:], c.txids.Uint64())
	binary.BigEndian.PutUint32(txid[8:], uint32(c.txids.Uint64()))
	total := wire.PutDataIndication(p[start:off], txid, from, n)
	clear(p[off+n : start+total]) // padding
	return p[start : start+total], 0, true
}

// relayUp sends a client's ChannelData payload to its peer (uplink fast
// path). It writes the descriptor directly (see mmsg.SendTo for why), under
// fdMu so Close cannot pull the descriptor away mid-send.
//
// Hot path: no allocation.
func (c *Conn) relayUp(payload []byte, peer netip.AddrPort) {
	cost := len(payload) + udpHeader(c.key.v6)
	if !c.toRate.allow(cost, c.relay) {
		c.route.Usage.Limited(c.relay.opts.Counters, true, len(payload))
		return
	}
	c.fdMu.RLock()
	// Counted under the lock too, so the totals are final once Close has it.
	// A closed socket sent nothing, so it charges nothing, as WriteTo.
	err := net.ErrClosed
	if !c.fdClosed {
		err = mmsg.SendTo(int(c.fd), payload, peer, c.key.v6)
	}
	switch {
	case err == nil:
		c.toPeer(len(payload))
	case errors.Is(err, net.ErrClosed):
		c.toRate.refund(cost)
	default:
		c.toRate.refund(cost)
		c.dropTo(traffic.SendError, len(payload))
	}
	c.fdMu.RUnlock()
}

// toPeer and fromPeer count relayed datagrams in the route's tally, the
// IPv6 socket of an opened route apart.
//
// Hot path: no allocation.
func (c *Conn) toPeer(n int) {
	if c.six {
		c.route.Usage.ToPeer6(c.relay.opts.Counters, n)
		return
	}
	c.route.Usage.ToPeer(c.relay.opts.Counters, n)
}

func (c *Conn) fromPeer(pkts, bytes int) {
	if c.six {
		c.route.Usage.FromPeer6(c.relay.opts.Counters, pkts, bytes)
		return
	}
	c.route.Usage.FromPeer(c.relay.opts.Counters, pkts, bytes)
}

// Close closes the socket once, flushes its traffic tally and forgets it.
func (c *Conn) Close() error {
	if k := c.kern.Load(); k != nil {
		k.close(c) // before the port can be reused
	}
	c.fdMu.Lock()
	c.fdClosed = true
	c.fdMu.Unlock()
	if c.loop != nil {
		c.loop.remove(c) // before the descriptor closes and its number is reused
	}
	err := c.Socket.Close()
	c.once.Do(func() {
		c.route.Usage.Flush(c.relay.opts.Counters)
		c.relay.forget(c)
	})
	return err
}

// dropTo and dropFrom count a datagram of n bytes dropped for a rare
// reason (not a permission's lack, not a rate: see tally) toward the peer
// or toward the client, straight into the shared totals.
func (c *Conn) dropTo(why traffic.Reason, n int) {
	dropInto(&c.relay.opts.Counters.DroppedToPeer[why], 1, n)
}

func (c *Conn) dropFrom(why traffic.Reason, n int) {
	if why == traffic.NoPermission {
		c.route.Usage.UnpermittedFrom(c.relay.opts.Counters, n)
		return
	}
	dropInto(&c.relay.opts.Counters.DroppedToClient[why], 1, n)
}

func dropInto(d *traffic.Drops, pkts, bytes int) {
	d.Packets.Add(uint64(pkts))
	d.Bytes.Add(uint64(bytes))
}

// isClosed reports whether Close has begun.
func (c *Conn) isClosed() bool {
	c.fdMu.RLock()
	defer c.fdMu.RUnlock()
	return c.fdClosed
}
