package relay

import (
	"net"
	"net/netip"
	"sync"

	"github.com/turnd/turnd/internal/bindings"
	"github.com/turnd/turnd/internal/mmsg"
	"github.com/turnd/turnd/internal/netaddr"
	"github.com/turnd/turnd/internal/offload"
)

// The kernel fast path (relay.offload): the relay keeps, for each UDP
// allocation it may offload, a copy of its channels in the kernel's maps,
// changed in the same call that changes the route's (bindings.Route's
// mirror), so an expired, deleted or revoked channel stops in the kernel
// when it stops here. What the kernel relays is counted per relay socket
// in per-CPU counters and folded into the route's tally when someone reads
// it (Counters.Settle) and when the socket closes. Allocations held to a
// rate, and everything but a UDP client's ChannelData, stay in user space.

// Kernel is the in-kernel fast path as the relay drives it (offload.Path).
type Kernel interface {
	Put(offload.Entry) error
	Delete(offload.Entry) error
	NewSlot() (uint32, error)
	FreeSlot(slot uint32)
	Count(slot uint32) (offload.Count, error)
}

// kroute is one allocation's share of the kernel path.
type kroute struct {
	rl             *Relay
	route          *bindings.Route
	client, server netip.AddrPort
	df             bool

	mu     sync.Mutex
	socks  [2]*kconn                // by Families.Index; nil once closed
	on     map[uint16]offload.Entry // installed in the kernel, by channel number
	closed bool
}

// kconn is one relay socket's counter slot and what was folded of it.
type kconn struct {
	c    *Conn
	addr netip.AddrPort
	slot uint32
	seen offload.Count
}

// offloadable reports whether the kernel can relay for a route with lane
// as its client's socket: a UDP client on an address with an IP.
func (rl *Relay) offloadable(r *bindings.Route, lane *mmsg.Socket) bool {
	if rl.opts.Kernel == nil || lane == nil || r.Client.Stream != nil {
		return false
	}
	ip := r.Client.Tuple.Server.Addr()
	return ip.IsValid() && !ip.IsUnspecified()
}

// offload gives r's relay sockets to the kernel path: a counter slot each,
// and the route's channels from now on. A socket bound to no particular
// address, or a slot not to be had, leaves the route in user space.
func (rl *Relay) offload(r *bindings.Route, o *opened, df bool) {
	k := &kroute{rl: rl, route: r, client: netaddr.Unmap(r.Client.Tuple.Client),
		server: netaddr.Unmap(r.Client.Tuple.Server), df: df, on: make(map[uint16]offload.Entry)}
	for i, c := range o.socks {
		if c == nil {
			continue
		}
		addr := netaddr.Unmap(netaddr.AddrPort(c.LocalAddr()))
		if addr.Addr().IsUnspecified() {
			k.free()
			return
		}
		slot, err := rl.opts.Kernel.NewSlot()
		if err != nil {
			rl.kernelFailed(err)
			k.free()
			return
		}
		k.socks[i] = &kconn{c: c, addr: addr, slot: slot}
		c.kern.Store(k)
	}
	rl.mu.Lock()
	o.kernel = k
	rl.mu.Unlock()
	r.SetMirror(k.sync)
	k.sync()
}

// free gives back the slots taken so far of a route that stays in user
// space.
func (k *kroute) free() {
	for i, kc := range k.socks {
		if kc != nil {
			kc.c.kern.Store(nil)
			k.rl.opts.Kernel.FreeSlot(kc.slot)
			k.socks[i] = nil
		}
	}
}

// sync makes the kernel's entries of the route what its channels say now:
// none while the relay is paused (a hand-over: the sockets' queues hold
// what arrives) or while the allocation is held to a rate.
func (k *kroute) sync() {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.closed {
		return
	}
	want := make(map[uint16]offload.Entry)
	if !k.rl.kernelPaused.Load() && !k.limited() {
		for _, ch := range k.route.Channels() {
			if e, ok := k.entry(ch); ok {
				want[ch.Number] = e
			}
		}
	}
	for n, e := range k.on {
		if w, ok := want[n]; ok && w == e {
			continue
		}
		k.remove(n, e)
	}
	for n, e := range want {
		if _, ok := k.on[n]; ok {
			continue
		}
		if err := k.rl.opts.Kernel.Put(e); err != nil {
			k.rl.kernelFailed(err) // that channel goes on in user space
			continue
		}
		k.on[n] = e
		k.rl.opts.Counters.KernelChannels.Add(1)
	}
}

// entry is the kernel's entry for channel ch, through the relay socket of
// its peer's family; false when there is none, or the peer is one no data
// may go to.
func (k *kroute) entry(ch bindings.Channel) (offload.Entry, bool) {
	i := bindings.V6.Index()
	if ch.Peer.Addr().Is4() {
		i = bindings.V4.Index()
	}
	kc := k.socks[i]
	if kc == nil || k.local(ch.Peer.Addr()) || (k.rl.opts.Forbidden != nil && k.rl.opts.Forbidden(ch.Peer)) {
		return offload.Entry{}, false
	}
	return offload.Entry{Client: k.client, Server: k.server, Relay: kc.addr, Peer: ch.Peer,
		Channel: ch.Number, Slot: kc.slot, DontFragment: k.df}, true
}

// local reports whether ip is one of turnd's own addresses: the kernel
// would not relay to it (the route is local), and an entry keyed by it
// would take a datagram spoofed from outside with that source, which the
// stack drops as a martian before user space sees it.
func (k *kroute) local(ip netip.Addr) bool {
	if ip == k.server.Addr() {
		return true
	}
	for _, a := range []net.IP{k.rl.opts.IPv4, k.rl.opts.IPv6, k.rl.opts.External4, k.rl.opts.External6} {
		if own, ok := netip.AddrFromSlice(a); ok && own.Unmap() == ip {
			return true
		}
	}
	for _, kc := range k.socks {
		if kc != nil && kc.addr.Addr() == ip {
			return true
		}
	}
	return false
}

// limited reports whether the allocation is held to a rate, which only
// user space applies.
func (k *kroute) limited() bool {
	for _, kc := range k.socks {
		if kc != nil {
			return kc.c.toRate.limited() || kc.c.fromRate.limited()
		}
	}
	return false
}

// remove takes channel n's entry e out of the kernel. k.mu must be held.
func (k *kroute) remove(n uint16, e offload.Entry) {
	if err := k.rl.opts.Kernel.Delete(e); err != nil {
		k.rl.kernelFailed(err)
	}
	delete(k.on, n)
	k.rl.opts.Counters.KernelChannels.Add(-1)
}

// fold adds what the kernel relayed through kc since the last fold to the
// route's tally. k.mu must be held.
func (k *kroute) fold(kc *kconn) {
	n, err := k.rl.opts.Kernel.Count(kc.slot)
	if err != nil {
		k.rl.kernelFailed(err)
		return
	}
	// The program counts a datagram before its rewrite and takes it back
	// if the rewrite fails: a read in between sees one more than later
	// ones. Only rises are folded, so no total ever goes down; such a
	// datagram stays counted, as one lost on the wire would.
	d := offload.Count{ToPeerPackets: rise(n.ToPeerPackets, &kc.seen.ToPeerPackets),
		ToPeerBytes:     rise(n.ToPeerBytes, &kc.seen.ToPeerBytes),
		ToClientPackets: rise(n.ToClientPackets, &kc.seen.ToClientPackets),
		ToClientBytes:   rise(n.ToClientBytes, &kc.seen.ToClientBytes)}
	k.route.Usage.Kernel(k.rl.opts.Counters, kc.c.six, d.ToPeerPackets, d.ToPeerBytes, d.ToClientPackets, d.ToClientBytes)
}

// rise returns how far now is above *seen and raises *seen to it; 0 when
// now is not above.
func rise(now uint64, seen *uint64) uint64 {
	if now <= *seen {
		return 0
	}
	d := now - *seen
	*seen = now
	return d
}

// foldAll folds every socket of the route.
func (k *kroute) foldAll() {
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, kc := range k.socks {
		if kc != nil {
			k.fold(kc)
		}
	}
}

// close takes c's channels out of the kernel before its socket closes (its
// port may be reused at once), folds its count and frees its slot; the
// route's last socket ends the mirror.
func (k *kroute) close(c *Conn) {
	k.mu.Lock()
	defer k.mu.Unlock()
	for i, kc := range k.socks {
		if kc == nil || kc.c != c {
			continue
		}
		for n, e := range k.on {
			if e.Slot == kc.slot {
				k.remove(n, e)
			}
		}
		k.fold(kc)
		k.rl.opts.Kernel.FreeSlot(kc.slot)
		k.socks[i] = nil
	}
	if k.socks == [2]*kconn{} && !k.closed {
		k.closed = true
		k.route.SetMirror(nil)
	}
}

// kernelRoutes are the routes the kernel path serves now.
func (rl *Relay) kernelRoutes() []*kroute {
	rl.mu.Lock()
	defer rl.mu.Unlock()
	var ks []*kroute
	for _, o := range rl.routes {
		if o.kernel != nil {
			ks = append(ks, o.kernel)
		}
	}
	return ks
}

// Settle folds what the kernel relayed into every route's tally (the
// Counters' Settle, which New wires to it).
func (rl *Relay) Settle() {
	if rl.opts.Kernel == nil {
		return
	}
	for _, k := range rl.kernelRoutes() {
		k.foldAll()
	}
}

// kernelPause takes every entry out of the kernel, so that what arrives
// during a hand-over waits in the sockets' queues, and folds the counts
// into the tallies the successor inherits; kernelResume puts them back.
func (rl *Relay) kernelPause() {
	rl.kernelPaused.Store(true)
	for _, k := range rl.kernelRoutes() {
		k.sync()
		k.foldAll()
	}
}

func (rl *Relay) kernelResume() {
	rl.kernelPaused.Store(false)
	for _, k := range rl.kernelRoutes() {
		k.sync()
	}
}

// kernelFailed reports a failure of the kernel path, which leaves the
// traffic concerned in user space.
func (rl *Relay) kernelFailed(err error) {
	if rl.opts.KernelFailed != nil {
		rl.opts.KernelFailed(err)
	}
}

// resyncKernel applies a rate change of the UDP relay advertised as
// relayAddr to the kernel path: a rate takes the route out of it, none
// puts it back.
func (rl *Relay) resyncKernel(relayAddr net.Addr) {
	ua, ok := relayAddr.(*net.UDPAddr)
	if !ok {
		return
	}
	rl.mu.Lock()
	c := rl.live[liveKey{v6: ua.IP.To4() == nil, port: ua.Port}]
	rl.mu.Unlock()
	if c == nil {
		return
	}
	if k := c.kern.Load(); k != nil {
		k.sync()
	}
}
