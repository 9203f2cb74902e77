package relay

import (
	"context"
	"net"
	"net/netip"
	"sync"
	"testing"

	"github.com/turnd/turnd/internal/bindings"
	"github.com/turnd/turnd/internal/mmsg"
	"github.com/turnd/turnd/internal/netaddr"
	"github.com/turnd/turnd/internal/offload"
	"github.com/turnd/turnd/internal/traffic"
)

// fakeKernel stands in for offload.Path: what is installed, which slots
// are taken, and counts the test sets as if the kernel had relayed them.
type fakeKernel struct {
	mu      sync.Mutex
	entries map[offload.Entry]bool
	slots   map[uint32]bool
	counts  map[uint32]offload.Count
	next    uint32
}

func newFakeKernel() *fakeKernel {
	return &fakeKernel{entries: map[offload.Entry]bool{}, slots: map[uint32]bool{}, counts: map[uint32]offload.Count{}}
}

func (k *fakeKernel) Put(e offload.Entry) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.entries[e] = true
	return nil
}

func (k *fakeKernel) Delete(e offload.Entry) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	delete(k.entries, e)
	return nil
}

func (k *fakeKernel) NewSlot() (uint32, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.next++
	k.slots[k.next] = true
	k.counts[k.next] = offload.Count{}
	return k.next, nil
}

func (k *fakeKernel) FreeSlot(s uint32) {
	k.mu.Lock()
	defer k.mu.Unlock()
	delete(k.slots, s)
}

func (k *fakeKernel) Count(s uint32) (offload.Count, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.counts[s], nil
}

// relayed adds what the kernel relayed through slot s.
func (k *fakeKernel) relayed(s uint32, to, from int) {
	k.mu.Lock()
	defer k.mu.Unlock()
	c := k.counts[s]
	c.ToPeerPackets += uint64(to)
	c.ToPeerBytes += uint64(to * 100)
	c.ToClientPackets += uint64(from)
	c.ToClientBytes += uint64(from * 100)
	k.counts[s] = c
}

func (k *fakeKernel) installed() []offload.Entry {
	k.mu.Lock()
	defer k.mu.Unlock()
	var out []offload.Entry
	for e := range k.entries {
		out = append(out, e)
	}
	return out
}

func (k *fakeKernel) taken() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return len(k.slots)
}

// kernelRig is a relay with a fake kernel path and one UDP route of a
// client on a loopback lane.
type kernelRig struct {
	k        *fakeKernel
	rl       *Relay
	counters *traffic.Counters
	route    *bindings.Route
	relay    netip.AddrPort
	client   netip.AddrPort
	server   netip.AddrPort
	forbid   map[netip.AddrPort]bool
}

// loopbackLane is a client-facing UDP socket on 127.0.0.1, closed with
// the test.
func loopbackLane(t *testing.T) *mmsg.Socket {
	t.Helper()
	ln, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	lane, err := mmsg.Adopt(ln)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lane.Close() })
	return lane
}

func newKernelRig(t *testing.T) *kernelRig {
	t.Helper()
	g := &kernelRig{k: newFakeKernel(), counters: &traffic.Counters{}, forbid: map[netip.AddrPort]bool{}}
	g.rl = New(Options{IPv4: net.IPv4(127, 0, 0, 1), MinPort: 20000, MaxPort: 40000, Counters: g.counters,
		Kernel: g.k, Forbidden: func(p netip.AddrPort) bool { return g.forbid[p] }})
	t.Cleanup(g.rl.Close)
	lane := loopbackLane(t)
	g.client = netip.MustParseAddrPort("127.0.0.1:41000")
	g.server = netaddr.AddrPort(lane.LocalAddr())
	_, relayAddr := g.rl.openUDPAt(t, "udp4", lane, net.UDPAddrFromAddrPort(g.client), lane.LocalAddr(), nil)
	g.relay = relayAddr.AddrPort()
	g.route = g.rl.routeAt(relayAddr)
	return g
}

func (g *kernelRig) bind(peer string, number uint16, remove bool) {
	bindChannel(g.route, netip.MustParseAddrPort(peer), number, remove)
}

func (g *kernelRig) slot(t *testing.T) uint32 {
	t.Helper()
	c := g.rl.live[liveKey{port: int(g.relay.Port())}]
	if c == nil || c.kern.Load() == nil || c.kern.Load().socks[0] == nil {
		t.Fatal("the route's relay socket has no kernel slot")
	}
	return c.kern.Load().socks[0].slot
}

// TestKernelMirrorsChannels: a channel bound is in the kernel with the
// route's 5-tuple, relay address and slot; one unbound leaves it in the
// same call.
func TestKernelMirrorsChannels(t *testing.T) {
	g := newKernelRig(t)
	g.bind("127.0.0.2:5000", 0x4001, false)
	want := offload.Entry{Client: g.client, Server: g.server, Relay: g.relay,
		Peer: netip.MustParseAddrPort("127.0.0.2:5000"), Channel: 0x4001, Slot: g.slot(t)}
	if got := g.k.installed(); len(got) != 1 || got[0] != want {
		t.Fatalf("installed %+v; want [%+v]", got, want)
	}
	if n := g.counters.KernelChannels.Load(); n != 1 {
		t.Fatalf("KernelChannels %d; want 1", n)
	}
	g.bind("127.0.0.2:5000", 0x4001, true)
	if got := g.k.installed(); len(got) != 0 {
		t.Fatalf("after unbinding, installed %+v; want none", got)
	}
	if n := g.counters.KernelChannels.Load(); n != 0 {
		t.Fatalf("KernelChannels %d after unbinding; want 0", n)
	}
}

// TestKernelLeavesForbiddenPeersOut: a peer no data may go to never gets
// a kernel entry.
func TestKernelLeavesForbiddenPeersOut(t *testing.T) {
	g := newKernelRig(t)
	g.forbid[netip.MustParseAddrPort("127.0.0.2:5001")] = true
	g.bind("127.0.0.2:5001", 0x4002, false)
	if got := g.k.installed(); len(got) != 0 {
		t.Fatalf("installed %+v for a forbidden peer; want none", got)
	}
}

// TestKernelCountsFoldIntoTheTally: what the kernel relayed is in the
// route's usage after Settle, and again at close, once each.
func TestKernelCountsFoldIntoTheTally(t *testing.T) {
	g := newKernelRig(t)
	g.bind("127.0.0.2:5000", 0x4001, false)
	s := g.slot(t)
	g.k.relayed(s, 3, 2)
	g.counters.Settle()
	if u := g.route.Usage.Usage(); u.ToPeerPackets != 3 || u.ToPeerBytes != 300 || u.FromPeerPackets != 2 || u.FromPeerBytes != 200 {
		t.Fatalf("usage after Settle %+v; want 3/300 to the peer, 2/200 back", u)
	}
	g.k.relayed(s, 1, 0)
	g.rl.Routes().Close(g.route, bindings.Both)
	if u := g.route.Usage.Usage(); u.ToPeerPackets != 4 || u.FromPeerPackets != 2 {
		t.Fatalf("usage after close %+v; want 4 to the peer, 2 back", u)
	}
	if got, n := g.k.installed(), g.k.taken(); len(got) != 0 || n != 0 {
		t.Fatalf("after close: %d entries, %d slots taken; want none", len(got), n)
	}
	if k := &g.counters.Kernel; k.ToPeerPackets.Load() != 4 || k.ToClientPackets.Load() != 2 {
		t.Fatalf("kernel totals %d to peers, %d to clients; want 4, 2", k.ToPeerPackets.Load(), k.ToClientPackets.Load())
	}
	if g.counters.ToPeerPackets.Load() != 4 || g.counters.FromPeerPackets.Load() != 2 {
		t.Fatalf("relayed totals %d, %d; want 4, 2", g.counters.ToPeerPackets.Load(), g.counters.FromPeerPackets.Load())
	}
}

// TestKernelLeavesLimitedAllocations: an allocation held to a rate leaves
// the kernel path (user space applies rates), and comes back when the rate
// is lifted.
func TestKernelLeavesLimitedAllocations(t *testing.T) {
	g := newKernelRig(t)
	g.bind("127.0.0.2:5000", 0x4001, false)
	relayAddr := net.UDPAddrFromAddrPort(g.relay)
	if err := g.rl.SetRate(relayAddr, 1_000_000); err != nil {
		t.Fatal(err)
	}
	if got := g.k.installed(); len(got) != 0 {
		t.Fatalf("with a rate, installed %+v; want none", got)
	}
	if err := g.rl.SetRate(relayAddr, 0); err != nil {
		t.Fatal(err)
	}
	var u UserRate
	u.Set(0)
	if err := g.rl.ShareRate(relayAddr, &u); err != nil {
		t.Fatal(err)
	}
	if got := g.k.installed(); len(got) != 0 {
		t.Fatalf("sharing a user's rate, installed %+v; want none", got)
	}
	if err := g.rl.ShareRate(relayAddr, nil); err != nil {
		t.Fatal(err)
	}
	if got := g.k.installed(); len(got) != 1 {
		t.Fatalf("with no rate again, installed %+v; want the channel", got)
	}
}

// TestKernelPausesWithTheRelay: a hand-over's pause takes every entry out
// and folds the counts (the successor inherits the tally); resume puts the
// entries back.
func TestKernelPausesWithTheRelay(t *testing.T) {
	g := newKernelRig(t)
	g.bind("127.0.0.2:5000", 0x4001, false)
	g.k.relayed(g.slot(t), 5, 0)
	if err := g.rl.Pause(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := g.k.installed(); len(got) != 0 {
		t.Fatalf("paused, installed %+v; want none", got)
	}
	if u := g.route.Usage.Usage(); u.ToPeerPackets != 5 {
		t.Fatalf("paused, usage %+v; want the kernel's 5 packets folded", u)
	}
	g.bind("127.0.0.2:5002", 0x4003, false)
	if got := g.k.installed(); len(got) != 0 {
		t.Fatalf("a channel bound while paused was installed: %+v", got)
	}
	g.rl.Resume()
	if got := g.k.installed(); len(got) != 2 {
		t.Fatalf("resumed, installed %+v; want both channels", got)
	}
}

// TestKernelServesOnlyUDPClientsOnAnAddress: a stream client's route stays
// in user space.
func TestKernelServesOnlyUDPClientsOnAnAddress(t *testing.T) {
	k := newFakeKernel()
	rl := New(Options{IPv4: net.IPv4(127, 0, 0, 1), MinPort: 20000, MaxPort: 40000, Kernel: k})
	t.Cleanup(rl.Close)
	ln := listenTCP4(t)
	client, server, raw := dialRaw(t, ln)
	_ = client
	_, relayAddr := rl.openUDPAt(t, "udp4", nil, server.RemoteAddr(), server.LocalAddr(), newWriterStream(raw))
	bindChannel(rl.routeAt(relayAddr), netip.MustParseAddrPort("127.0.0.2:5000"), 0x4001, false)
	if got, n := k.installed(), k.taken(); len(got) != 0 || n != 0 {
		t.Fatalf("a TCP client's route: %d entries, %d slots; want none", len(got), n)
	}
}

// TestKernelLeavesOwnAddressesOut: a channel to one of turnd's own
// addresses (another relay port of this server) gets no kernel entry: its
// datagrams never take the kernel path, and an entry would take ones
// spoofed from outside with that source.
func TestKernelLeavesOwnAddressesOut(t *testing.T) {
	g := newKernelRig(t)
	g.bind("127.0.0.1:5003", 0x4004, false) // the relay's bind address
	g.bind(g.server.String(), 0x4005, false)
	if got := g.k.installed(); len(got) != 0 {
		t.Fatalf("installed %+v for turnd's own addresses; want none", got)
	}
}

// TestKernelDropsOneFamily: when one family of a dual allocation ends
// (its lifetime, RFC 8656 §7.2 ADDITIONAL-ADDRESS-FAMILY), its channels
// leave the kernel and its slot is freed; the other family's stay.
func TestKernelDropsOneFamily(t *testing.T) {
	k := newFakeKernel()
	rl := New(Options{IPv4: net.IPv4(127, 0, 0, 1), IPv6: net.IPv6loopback, MinPort: 20000, MaxPort: 40000, Kernel: k})
	t.Cleanup(rl.Close)
	lane := loopbackLane(t)
	client := netip.MustParseAddrPort("127.0.0.1:41000")
	r := &bindings.Route{Client: bindings.Client{Tuple: netaddr.Of(net.UDPAddrFromAddrPort(client), lane.LocalAddr()), Lane: lane}}
	if _, err := rl.Routes().Open(r, bindings.Want{Families: bindings.Both}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rl.Routes().Close(r, bindings.Both) })
	bindChannel(r, netip.MustParseAddrPort("127.0.0.2:5000"), 0x4001, false)
	bindChannel(r, netip.MustParseAddrPort("[::2]:5000"), 0x4002, false)
	if got, n := k.installed(), k.taken(); len(got) != 2 || n != 2 {
		t.Fatalf("dual allocation: %d entries, %d slots; want 2, 2", len(got), n)
	}
	rl.Routes().Close(r, bindings.V6)
	got := k.installed()
	if len(got) != 1 || got[0].Channel != 0x4001 || k.taken() != 1 {
		t.Fatalf("after the IPv6 family ended: entries %+v, %d slots; want the IPv4 channel and its slot", got, k.taken())
	}
}

// TestKernelFoldNeverGoesBack: a count the program takes back (a rewrite
// that failed after it was counted) read in between folds nothing
// backwards: the totals only rise, and the next rise is folded once.
func TestKernelFoldNeverGoesBack(t *testing.T) {
	g := newKernelRig(t)
	g.bind("127.0.0.2:5000", 0x4001, false)
	s := g.slot(t)
	g.k.relayed(s, 5, 0)
	g.counters.Settle()
	g.k.relayed(s, 1, 0)
	g.counters.Settle()
	g.k.relayed(s, -1, 0)
	g.counters.Settle()
	if n := g.counters.Kernel.ToPeerPackets.Load(); n != 6 {
		t.Fatalf("kernel total %d after a count taken back; want it to stay at 6", n)
	}
	g.k.relayed(s, 2, 0)
	g.counters.Settle()
	if n, u := g.counters.Kernel.ToPeerPackets.Load(), g.route.Usage.Usage().ToPeerPackets; n != 7 || u != 7 {
		t.Fatalf("after two more: kernel total %d, usage %d; want 7, 7", n, u)
	}
}
