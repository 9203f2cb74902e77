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

// Conn is the relay socket of one UDP allocation. pion reads and writes it
// like any PacketConn, and it carries the downlink fast path: a peer
// datagram on a bound channel goes straight back to the client as
// ChannelData (or a Data indication with a permission), without pion and
// without a heap allocation — in a downlink loop for UDP and plain TCP
// clients, in pion's read loop (ReadFrom) for TLS clients.
type Conn struct {
	*mmsg.Socket // out of the runtime's poller: see mmsg.Socket
	relay        *Relay
	key          liveKey
	lane         *mmsg.Socket // the client-facing socket of the allocation's lane; nil for stream clients
	server       serverID     // turnd's side of the 5-tuple in the fast path's keys (serverID)
	// route holds the allocation's permissions, channels and tally, which
	// the fast paths read; client points at route.Client once it is known
	// (the store publishes the Client written before it).
	route  *bindings.Route
	client atomic.Pointer[bindings.Client]
	bindMu sync.Mutex // serialises pion's writers of the route's sets (Permit, BindChannel, Revoke)
	// opened: made by Open, so the route's owner keeps the uplink index
	// (open.go); six: the IPv6 socket of such a route, whose tally is
	// apart (Tally.Header6).
	opened, six bool
	txids       *rand.PCG // Data indication transaction IDs; the downlink loop's alone
	head        int       // bytes in front of the payload when reading: the larger header
	once        sync.Once

	// For a UDP or plain TCP client, a downlink loop reads the socket (see downlink.go)
	// and pion's read loop waits in ReadFrom until done is closed.
	loop     *downlink
	done     chan struct{}
	readPass uint32 // the loop's pass that last read the socket (the loop's alone)

	raw      *mmsg.Raw // pion's read loop reads through it when no downlink loop does
	fd       int32     // the socket's descriptor, for the fast paths' raw system calls
	fdMu     sync.RWMutex
	fdClosed bool

	// The address object pion keyed the allocation by, and the report of
	// its deletion, after which pion's goroutine for the socket retires
	// the key (retire.go).
	keyedBy  atomic.Pointer[net.Addr]
	reported chan struct{}
	// cut is set when turnd itself closed the socket to end the
	// allocation (Disconnect): pion's goroutine must then delete it.
	cut atomic.Bool

	// toRate and fromRate hold each direction to limits.max_bps and
	// limits.user_total_bps: the allocation's, which both relay sockets of
	// a dual-stack route share.
	toRate, fromRate *limit
}

// ReadFrom hands pion what the fast path does not relay itself.
//
// Hot path: one call per datagram from a peer. The payload is read far
// enough into p that a ChannelData header (4 bytes, RFC 8656 §12.4: no
// padding over UDP) or a Data indication head can be put in front of it in
// place, and padding after it; no heap allocation.
func (c *Conn) ReadFrom(p []byte) (int, net.Addr, error) {
	n, addr, err := c.readFrom(p)
	if err != nil && c.isClosed() {
		c.retire() // pion deletes by 5-tuple next: see retire.go
	}
	return n, addr, err
}

func (c *Conn) readFrom(p []byte) (int, net.Addr, error) {
	if c.loop != nil {
		<-c.done
		return 0, nil, net.ErrClosed
	}
	for {
		if len(p) <= c.head+4 {
			return c.Socket.ReadFrom(p)
		}
		room := p[c.head : len(p)-3]
		n, from, err := c.raw.RecvFrom(room)
		if err != nil {
			return 0, nil, err
		}
		if n > len(room) {
			// Longer than pion's buffer: relayed cut short it would be
			// another datagram than the peer sent.
			c.discard(from, n)
			continue
		}
		cost := n + udpHeader(c.key.v6)
		cp := c.client.Load()
		if cp == nil {
			// pion relays it by its own bindings, which the fast path
			// mirrors: what they would discard is not charged.
			if !c.routed(from) {
				c.route.Usage.UnpermittedFrom(c.relay.opts.Counters, n)
				continue
			}
			if !c.fromRate.allow(cost, c.relay) {
				c.route.Usage.Limited(c.relay.opts.Counters, false, n)
				continue
			}
			c.fromPeer(1, n)
			copy(p, p[c.head:c.head+n])
			return n, net.UDPAddrFromAddrPort(from), nil
		}
		// Neither a channel nor a permission: RFC 8656 §11.3 says discard.
		// pion would too, with a log line per datagram; a peer spraying a
		// relay port is not worth one.
		frame, why, ok := c.frameDown(p, c.head, n, from, cp.Stream != nil)
		switch {
		case !ok:
			c.dropFrom(why, n)
		case !c.fromRate.allow(cost, c.relay):
			c.route.Usage.Limited(c.relay.opts.Counters, false, n)
		default:
			cp.Send(frame)
			c.fromPeer(1, n)
		}
	}
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

// WriteTo is pion's uplink path (Send indications, and ChannelData the
// fast path did not take).
func (c *Conn) WriteTo(p []byte, addr net.Addr) (int, error) {
	if c.relay.forbidden(addr) {
		c.dropTo(traffic.ForbiddenPeer, len(p))
		return len(p), nil // dropped, as a datagram may be
	}
	cost := len(p) + udpHeader(c.key.v6)
	if !c.toRate.allow(cost, c.relay) {
		c.route.Usage.Limited(c.relay.opts.Counters, true, len(p))
		return len(p), nil // dropped as a full socket buffer would: pion need not know
	}
	n, err := c.Socket.WriteTo(p, addr)
	if err != nil {
		c.toRate.refund(cost)
		if !errors.Is(err, net.ErrClosed) {
			c.dropTo(traffic.SendError, len(p))
		}
		return n, err
	}
	c.toPeer(n)
	return n, nil
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
	c.fdMu.Lock()
	c.fdClosed = true
	c.fdMu.Unlock()
	if c.loop != nil {
		c.loop.remove(c) // before the descriptor closes and its number is reused
	}
	err := c.Socket.Close()
	c.once.Do(func() {
		c.relay.awaitingReport(c)
		if c.done != nil {
			close(c.done)
		}
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
