package relay

import (
	"context"
	"errors"
	"io"
	"net"
	"net/netip"
	"strconv"
	"testing"

	"github.com/pion/transport/v5/reuseport"

	"github.com/turnd/turnd/internal/bindings"
	"github.com/turnd/turnd/internal/mmsg"
	"github.com/turnd/turnd/internal/netaddr"
)

func freePortRange(t *testing.T, n int) (int, int) {
	t.Helper()
	// Find n consecutive free UDP ports by probing; good enough on a quiet test host.
	// TCP too, as TCP relays listen: a relay port whose peer connection the
	// relay closed stays in TIME_WAIT for a minute after a test.
	lc := net.ListenConfig{Control: reuseport.Control}
	for base := 40000; base < 60000; base += n + 7 {
		ok := true
		var held []io.Closer
		for p := base; p < base+n; p++ {
			c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: p})
			if err != nil {
				ok = false
				break
			}
			held = append(held, c)
			l, err := lc.Listen(context.Background(), "tcp4", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
			if err != nil {
				ok = false
				break
			}
			held = append(held, l)
		}
		for _, c := range held {
			c.Close()
		}
		if ok {
			return base, base + n - 1
		}
	}
	t.Fatal("no free port range")
	return 0, 0
}

// portsRig opens UDP routes on one relay, each for a client of its own.
type portsRig struct {
	g      *Relay
	lane   *mmsg.Socket
	client uint16 // the last client port used
}

func newPortsRig(t *testing.T, opts Options) *portsRig {
	t.Helper()
	g := New(opts)
	t.Cleanup(g.Close)
	return &portsRig{g: g, lane: listenLane(t, "udp4", "127.0.0.1")}
}

// open opens a route for w and a fresh client; close ends it.
func (r *portsRig) open(w bindings.Want) (route *bindings.Route, got bindings.Relayed, err error) {
	r.client++
	route = &bindings.Route{Client: bindings.Client{Lane: r.lane, Tuple: netaddr.FiveTuple{
		Client: netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), 10000+r.client),
		Server: r.lane.LocalAddr().(*net.UDPAddr).AddrPort()}}}
	got, err = r.g.Routes().Open(route, w)
	return route, got, err
}

func (r *portsRig) close(route *bindings.Route) { r.g.Routes().Close(route, bindings.Both) }

// mustOpen is open, failing the test on an error; the route closes with it.
func (r *portsRig) mustOpen(t *testing.T, w bindings.Want) (*bindings.Route, bindings.Relayed) {
	t.Helper()
	route, got, err := r.open(w)
	if err != nil {
		t.Fatalf("open %+v: %v", w, err)
	}
	t.Cleanup(func() { r.close(route) })
	return route, got
}

// sock is the IPv4 relay socket of route.
func (r *portsRig) sock(route *bindings.Route) *Conn {
	r.g.mu.Lock()
	defer r.g.mu.Unlock()
	return r.g.routes[route].socks[0]
}

var v4 = bindings.Want{Families: bindings.V4}

func TestAllocateAdvertisesExternalAndCounts(t *testing.T) {
	lo, hi := freePortRange(t, 4)
	r := newPortsRig(t, Options{IPv4: net.IPv4(127, 0, 0, 1), External4: net.IPv4(203, 0, 113, 7), MinPort: lo, MaxPort: hi})
	if err := r.g.Validate(); err != nil {
		t.Fatal(err)
	}
	route, got := r.mustOpen(t, bindings.Want{Families: bindings.V4, DontFragment: true})
	ap := got.Addr[0]
	if ap.Addr() != netip.MustParseAddr("203.0.113.7") || int(ap.Port()) < lo || int(ap.Port()) > hi {
		t.Fatalf("advertised %v, want 203.0.113.7 in %d-%d", ap, lo, hi)
	}
	conn := r.sock(route)
	if bound := conn.LocalAddr().(*net.UDPAddr); !bound.IP.Equal(net.IPv4(127, 0, 0, 1)) || bound.Port != int(ap.Port()) {
		t.Fatalf("bound %v", bound)
	}
	if on, err := dontFragmentSet(conn.Socket); err != nil || !on {
		t.Fatalf("DF on=%v err=%v", on, err)
	}
	if r.g.liveCount() != 1 {
		t.Fatalf("live=%d", r.g.liveCount())
	}
	r.close(route)
	if r.g.liveCount() != 0 {
		t.Fatalf("live=%d after close", r.g.liveCount())
	}
}

func TestExhaustedRangeFailsFast(t *testing.T) {
	lo, hi := freePortRange(t, 3)
	r := newPortsRig(t, Options{IPv4: net.IPv4(127, 0, 0, 1), MinPort: lo, MaxPort: hi})
	for range 3 {
		r.mustOpen(t, v4)
	}
	if _, got, err := r.open(v4); !errors.Is(err, bindings.ErrNoPort) || !errors.Is(got.Refused[0], ErrNoFreePort) {
		t.Fatalf("fourth allocation: %v (%+v), want ErrNoPort from ErrNoFreePort", err, got)
	}
	if _, _, err := r.open(bindings.Want{Families: bindings.V6}); !errors.Is(err, bindings.ErrNoFamily) {
		t.Fatalf("udp6 without IPv6 relay: %v, want ErrNoFamily", err)
	}
}

func TestEvenPortsFirst(t *testing.T) {
	lo, hi := freePortRange(t, 8)
	r := newPortsRig(t, Options{IPv4: net.IPv4(127, 0, 0, 1), MinPort: lo, MaxPort: hi})
	for i := 0; i < 8; i++ {
		_, got := r.mustOpen(t, v4)
		if even := got.Addr[0].Port()%2 == 0; even != (i < 4) {
			t.Fatalf("allocation %d got port %d: even ports must come first", i, got.Addr[0].Port())
		}
	}
}

func TestReservedPairHoldsTheOddPort(t *testing.T) {
	lo, hi := freePortRange(t, 6)
	r := newPortsRig(t, Options{IPv4: net.IPv4(127, 0, 0, 1), MinPort: lo, MaxPort: hi})
	_, got := r.mustOpen(t, bindings.Want{Families: bindings.V4, Reserve: true})
	p := int(got.Addr[0].Port())
	if p%2 != 0 || got.Held != p+1 {
		t.Fatalf("pair starts at port %d holding %d, want an even port and the next", p, got.Held)
	}
	// Nobody else can take P+1 meanwhile...
	if c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: p + 1}); err == nil {
		c.Close()
		t.Fatalf("port %d was not held", p+1)
	}
	// ...but the reservation's own Allocate gets it.
	_, odd := r.mustOpen(t, bindings.Want{Families: bindings.V4, Port: p + 1})
	if int(odd.Addr[0].Port()) != p+1 {
		t.Fatalf("got %v, want port %d", odd.Addr[0], p+1)
	}
}

// TestReservationEndsWithItsAllocation: the held P+1 of a pair is released
// when the allocation on P closes, not 30 s later: Allocate with EVEN-PORT
// and Refresh 0, repeated, must not pile up ports no quota counts. A P+1
// already handed to its token's allocation is not touched.
func TestReservationEndsWithItsAllocation(t *testing.T) {
	lo, hi := freePortRange(t, 6)
	r := newPortsRig(t, Options{IPv4: net.IPv4(127, 0, 0, 1), MinPort: lo, MaxPort: hi})
	pair := bindings.Want{Families: bindings.V4, Reserve: true}
	route, got := r.mustOpen(t, pair)
	p := int(got.Addr[0].Port())
	r.close(route)
	c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: p + 1})
	if err != nil {
		t.Fatalf("port %d still held after its allocation on %d closed: %v", p+1, p, err)
	}
	c.Close()

	route, got = r.mustOpen(t, pair)
	p = int(got.Addr[0].Port())
	r.mustOpen(t, bindings.Want{Families: bindings.V4, Port: p + 1})
	r.close(route)
	if c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: p + 1}); err == nil {
		c.Close()
		t.Fatalf("port %d, now a live relay, was closed with its pair's first half", p+1)
	}
}

// TestEvenPortWithBusyPartnerIsAvoided: an even port whose odd partner is
// still a live relay (its pair's first half came and went) is not handed
// out while another pair is free — an EVEN-PORT reservation on it would
// find P+1 taken and get 508.
func TestEvenPortWithBusyPartnerIsAvoided(t *testing.T) {
	lo, hi := freePortRange(t, 4)
	lo += lo % 2 // an even start: pairs (lo, lo+1), (lo+2, lo+3)
	hi = lo + 3
	r := newPortsRig(t, Options{IPv4: net.IPv4(127, 0, 0, 1), MinPort: lo, MaxPort: hi})
	r.mustOpen(t, bindings.Want{Families: bindings.V4, Port: lo + 1})
	for i := 0; i < 10; i++ {
		route, got, err := r.open(v4)
		if err != nil {
			t.Fatal(err)
		}
		r.close(route)
		if port := int(got.Addr[0].Port()); port != lo+2 {
			t.Fatalf("got port %d, want %d (the even port whose partner is free)", port, lo+2)
		}
	}
}
