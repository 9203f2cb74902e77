package relay

import (
	"errors"
	"io"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/turnd/turnd/internal/bindings"
	"github.com/turnd/turnd/internal/mmsg"
)

// Routes is what pkg/turn's Relays names (docs/control-plane.md 2.5): a
// change of these signatures is a change of that interface.
var _ interface {
	Open(r *bindings.Route, w bindings.Want) (bindings.Relayed, error)
	Close(r *bindings.Route, f bindings.Families)
	Unhold(port int, v6 bool)
	Connect(r *bindings.Route, peer netip.AddrPort, id uint32, done func(error)) error
	TakePeer(r *bindings.Route, id uint32) (io.ReadWriteCloser, bool)
} = Routes{}

// openRig is a route the control plane would open: a UDP client on an
// IPv4 lane, and a peer of each family. The test writes the route's
// permissions and channels as the table would.
type openRig struct {
	rl     *Relay
	routes Routes
	up     func(pkt []byte, client netip.AddrPort) bool
	lane   *mmsg.Socket
	client *net.UDPConn
	peer4  *net.UDPConn
	peer6  *net.UDPConn
	route  *bindings.Route
}

func newOpenRig(t testing.TB, opts Options) *openRig {
	t.Helper()
	listen := func(network string, ip net.IP) *net.UDPConn {
		c, err := net.ListenUDP(network, &net.UDPAddr{IP: ip})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	lane, err := mmsg.Adopt(listen("udp4", net.IPv4(127, 0, 0, 1)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lane.Close() })
	if opts.MinPort == 0 {
		opts.MinPort, opts.MaxPort = 20000, 40000
	}
	rl := New(opts)
	t.Cleanup(rl.Close)
	r := &openRig{rl: rl, routes: rl.Routes(), up: rl.RelayFor(lane), lane: lane,
		client: listen("udp4", net.IPv4(127, 0, 0, 1)), peer4: listen("udp4", net.IPv4(127, 0, 0, 1)),
		peer6: listen("udp6", net.IPv6loopback)}
	r.route = &bindings.Route{Client: bindings.Client{Lane: lane}}
	r.route.Client.Tuple.Client = r.clientAP()
	r.route.Client.Tuple.Server = lane.LocalAddr().(*net.UDPAddr).AddrPort()
	return r
}

func dualOptions() Options { return Options{IPv4: net.IPv4(127, 0, 0, 1), IPv6: net.IPv6loopback} }

func (r *openRig) clientAP() netip.AddrPort { return r.client.LocalAddr().(*net.UDPAddr).AddrPort() }

func udpAP(c *net.UDPConn) netip.AddrPort { return c.LocalAddr().(*net.UDPAddr).AddrPort() }

// open opens the rig's route for w and closes it with the test.
func (r *openRig) open(t testing.TB, w bindings.Want) bindings.Relayed {
	t.Helper()
	got, err := r.routes.Open(r.route, w)
	if err != nil {
		t.Fatalf("open %+v: %v", w, err)
	}
	t.Cleanup(func() { r.routes.Close(r.route, bindings.Both) })
	return got
}

// bind gives the route a channel to each peer (0x4000: IPv4, 0x4001: IPv6)
// and their permissions, as the table's ChannelBind does.
func (r *openRig) bind() {
	p4, p6 := udpAP(r.peer4), udpAP(r.peer6)
	r.route.SetPermissions([]netip.Addr{p4.Addr(), p6.Addr()})
	r.route.SetChannels([]bindings.Channel{{Number: 0x4000, Peer: p4}, {Number: 0x4001, Peer: p6}})
}

// read reads one datagram from c within a few seconds.
func read(t testing.TB, c *net.UDPConn) ([]byte, netip.AddrPort) {
	t.Helper()
	buf := make([]byte, 2048)
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	n, from, err := c.ReadFromUDPAddrPort(buf)
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	return buf[:n], from
}

// TestOpenDualStack: a route asking for both families gets an IPv4 and an
// IPv6 relay socket, each bound where it is advertised, in the range.
func TestOpenDualStack(t *testing.T) {
	r := newOpenRig(t, dualOptions())
	got := r.open(t, bindings.Want{Families: bindings.Both})
	if got.Refused != [2]error{} {
		t.Fatalf("refused %v", got.Refused)
	}
	for i, want := range []netip.Addr{netip.MustParseAddr("127.0.0.1"), netip.IPv6Loopback()} {
		a := got.Addr[i]
		if a.Addr() != want || a.Port() < 20000 || a.Port() > 40000 {
			t.Errorf("family %d: relayed %v, want %v in 20000-40000", i, a, want)
		}
		r.rl.mu.Lock()
		c := r.rl.live[liveKey{v6: i == 1, port: int(a.Port())}]
		r.rl.mu.Unlock()
		if c == nil || c.route != r.route {
			t.Errorf("family %d: no live socket of the route on %v", i, a)
		}
	}
	if _, err := r.routes.Open(r.route, bindings.Want{Families: bindings.V4}); !errors.Is(err, ErrRouteOpen) {
		t.Errorf("a second Open of the route: %v, want ErrRouteOpen", err)
	}
	lost := &bindings.Route{Client: bindings.Client{Tuple: r.route.Client.Tuple}} // neither lane nor stream
	if _, err := r.routes.Open(lost, bindings.Want{Families: bindings.V4}); !errors.Is(err, ErrNoClientWriter) {
		t.Errorf("a route its data could not reach: %v, want ErrNoClientWriter", err)
	}
}

// TestOpenOneFamilyRefused: a family turnd has no address for, or no free
// port of, is refused on its own, for ADDRESS-ERROR-CODE; the other opens.
// A route none of whose families opens is an error and is not kept.
func TestOpenOneFamilyRefused(t *testing.T) {
	r := newOpenRig(t, Options{IPv4: net.IPv4(127, 0, 0, 1)})
	got := r.open(t, bindings.Want{Families: bindings.Both})
	if !got.Addr[0].IsValid() || got.Addr[1].IsValid() || !errors.Is(got.Refused[1], bindings.ErrNoFamily) {
		t.Fatalf("IPv4-only relay gave %+v; want IPv4, and IPv6 refused with ErrNoFamily", got)
	}
	r.routes.Close(r.route, bindings.Both)
	if _, err := r.routes.Open(r.route, bindings.Want{Families: bindings.V6}); !errors.Is(err, bindings.ErrNoFamily) {
		t.Fatalf("IPv6 alone: %v, want ErrNoFamily", err)
	}

	// One port in the range, taken for IPv6 by another socket.
	lo, _ := freePortRange(t, 1)
	busy, err := net.ListenUDP("udp6", &net.UDPAddr{IP: net.IPv6loopback, Port: lo})
	if err != nil {
		t.Fatalf("cannot hold [::1]:%d: %v", lo, err)
	}
	defer busy.Close()
	r = newOpenRig(t, Options{IPv4: net.IPv4(127, 0, 0, 1), IPv6: net.IPv6loopback, MinPort: lo, MaxPort: lo})
	got = r.open(t, bindings.Want{Families: bindings.Both})
	if got.Addr[0].Port() != uint16(lo) || got.Addr[1].IsValid() || !errors.Is(got.Refused[1], bindings.ErrNoPort) {
		t.Fatalf("with [::1]:%d taken: %+v; want IPv4 on %d, IPv6 refused with ErrNoPort", lo, got, lo)
	}
	r.routes.Close(r.route, bindings.Both)
	if _, err := r.routes.Open(r.route, bindings.Want{Families: bindings.V6}); !errors.Is(err, bindings.ErrNoPort) {
		t.Fatalf("IPv6 alone with its port taken: %v, want ErrNoPort", err)
	}
	if len(r.rl.routes) != 0 {
		t.Fatalf("%d routes kept after failed Opens", len(r.rl.routes))
	}
}

// TestOpenPortsAsAsked: EVEN-PORT gives an even port; with R=1 the next
// port is held and a second route redeems it (the token's port), and an
// unredeemed partner goes with Unhold or with its allocation;
// DONT-FRAGMENT sets DF on the socket.
func TestOpenPortsAsAsked(t *testing.T) {
	r := newOpenRig(t, dualOptions())
	sock := func(r *openRig, i int) *Conn {
		r.rl.mu.Lock()
		defer r.rl.mu.Unlock()
		return r.rl.routes[r.route].socks[i]
	}
	heldCount := func() int {
		r.rl.mu.Lock()
		defer r.rl.mu.Unlock()
		return len(r.rl.held)
	}
	got := r.open(t, bindings.Want{Families: bindings.V4, Even: true, DontFragment: true})
	if got.Addr[0].Port()%2 != 0 || got.Held != 0 {
		t.Fatalf("EVEN-PORT R=0 gave %+v, want an even port and nothing held", got)
	}
	if df, err := dontFragmentSet(sock(r, 0).Socket); err != nil || !df {
		t.Fatalf("DONT-FRAGMENT: DF %v (%v)", df, err)
	}
	r.routes.Close(r.route, bindings.Both)

	got = r.open(t, bindings.Want{Families: bindings.V4, Reserve: true})
	p := int(got.Addr[0].Port())
	if p%2 != 0 || got.Held != p+1 || !r.rl.inUse(false, p+1) {
		t.Fatalf("EVEN-PORT R=1 gave %+v; want an even port and the next one held", got)
	}
	other := &bindings.Route{Client: r.route.Client}
	other.Client.Tuple.Client = netip.AddrPortFrom(other.Client.Tuple.Client.Addr(), other.Client.Tuple.Client.Port()+1)
	redeemed, err := r.routes.Open(other, bindings.Want{Families: bindings.V4, Port: got.Held})
	if err != nil || int(redeemed.Addr[0].Port()) != got.Held {
		t.Fatalf("the token's port: %+v (%v), want port %d", redeemed, err, got.Held)
	}
	r.routes.Close(other, bindings.Both)
	r.routes.Close(r.route, bindings.Both)

	got = r.open(t, bindings.Want{Families: bindings.V4, Reserve: true})
	r.routes.Unhold(got.Held, false)
	c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: got.Held})
	if err != nil || heldCount() != 0 {
		t.Fatalf("after Unhold, port %d: %v, %d held", got.Held, err, heldCount())
	}
	c.Close()
	r.routes.Close(r.route, bindings.Both)
	got = r.open(t, bindings.Want{Families: bindings.V4, Reserve: true})
	r.routes.Close(r.route, bindings.Both)
	if heldCount() != 0 || r.rl.inUse(false, got.Held) {
		t.Fatal("the partner outlived its allocation")
	}
}

// TestOpenEvenPortOnly: with only an odd port free, EVEN-PORT is refused
// (508) where an Allocate without it gets the odd port.
func TestOpenEvenPortOnly(t *testing.T) {
	lo, _ := freePortRange(t, 3)
	even := lo + lo%2
	busy, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: even})
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	r := newOpenRig(t, Options{IPv4: net.IPv4(127, 0, 0, 1), MinPort: even, MaxPort: even + 1})
	if _, err := r.routes.Open(r.route, bindings.Want{Families: bindings.V4, Even: true}); !errors.Is(err, bindings.ErrNoPort) {
		t.Fatalf("EVEN-PORT with only %d free: %v, want ErrNoPort", even+1, err)
	}
	if got := r.open(t, bindings.Want{Families: bindings.V4}); int(got.Addr[0].Port()) != even+1 {
		t.Fatalf("without EVEN-PORT: %v, want port %d", got.Addr[0], even+1)
	}
}

// TestReserveIsForTheIPv4Address: EVEN-PORT R=1 on a dual allocation
// holds the partner of the IPv4 port and keeps the IPv6 one even; alone,
// an IPv6 allocation holds its own partner.
func TestReserveIsForTheIPv4Address(t *testing.T) {
	r := newOpenRig(t, dualOptions())
	got := r.open(t, bindings.Want{Families: bindings.Both, Even: true, Reserve: true})
	if p4 := int(got.Addr[0].Port()); got.Held != p4+1 || !r.rl.inUse(false, p4+1) {
		t.Fatalf("dual R=1: %+v; want the IPv4 port's partner held", got)
	}
	if p6 := got.Addr[1].Port(); p6%2 != 0 || r.rl.inUse(true, int(p6)+1) {
		t.Fatalf("dual R=1: IPv6 port %d, want even and its partner not held", p6)
	}
	r.routes.Close(r.route, bindings.Both)
	got = r.open(t, bindings.Want{Families: bindings.V6, Reserve: true})
	if p6 := int(got.Addr[1].Port()); got.Held != p6+1 || !r.rl.inUse(true, p6+1) {
		t.Fatalf("IPv6 alone R=1: %+v; want its partner held", got)
	}
}
