package relay

import (
	"context"
	"errors"
	"io"
	"net"
	"strconv"
	"testing"

	"github.com/pion/transport/v5/reuseport"
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

func TestAllocateAdvertisesExternalAndCounts(t *testing.T) {
	lo, hi := freePortRange(t, 4)
	g := New(Options{IPv4: net.IPv4(127, 0, 0, 1), External4: net.IPv4(203, 0, 113, 7), MinPort: lo, MaxPort: hi})
	if err := g.Validate(); err != nil {
		t.Fatal(err)
	}
	conn, addr, err := g.AllocateUDP("udp4", 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	ua := addr.(*net.UDPAddr)
	if !ua.IP.Equal(net.IPv4(203, 0, 113, 7)) || ua.Port < lo || ua.Port > hi {
		t.Fatalf("advertised %v, want 203.0.113.7 in %d-%d", ua, lo, hi)
	}
	if bound := conn.LocalAddr().(*net.UDPAddr); !bound.IP.Equal(net.IPv4(127, 0, 0, 1)) || bound.Port != ua.Port {
		t.Fatalf("bound %v", bound)
	}

	peer, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer peer.Close()
	if err := g.Permit(addr, net.IPv4(127, 0, 0, 1), false); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.WriteTo([]byte("hello"), peer.LocalAddr()); err != nil {
		t.Fatal(err)
	}
	if _, err := peer.WriteTo([]byte("hi"), conn.LocalAddr()); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	if _, _, err := conn.ReadFrom(buf); err != nil {
		t.Fatal(err)
	}
	conn.(*Conn).route.Usage.Flush(g.Counters()) // totals are published in batches
	c := g.Counters()
	if c.ToPeerPackets.Load() != 1 || c.ToPeerBytes.Load() != 5 || c.FromPeerPackets.Load() != 1 || c.FromPeerBytes.Load() != 2 {
		t.Fatalf("counters to=%d/%d from=%d/%d", c.ToPeerPackets.Load(), c.ToPeerBytes.Load(),
			c.FromPeerPackets.Load(), c.FromPeerBytes.Load())
	}

	if err := g.SetDontFragment(addr); err != nil {
		t.Fatal(err)
	}
	if on, err := dontFragmentSet(conn.(*Conn).Socket); err != nil || !on {
		t.Fatalf("DF on=%v err=%v", on, err)
	}
	if g.liveCount() != 1 {
		t.Fatalf("live=%d", g.liveCount())
	}
	conn.Close()
	if g.liveCount() != 0 {
		t.Fatalf("live=%d after close", g.liveCount())
	}
	if err := g.SetDontFragment(addr); !errors.Is(err, ErrNotTracked) {
		t.Fatalf("DF on closed relay: %v", err)
	}
}

func TestExhaustedRangeFailsFast(t *testing.T) {
	lo, hi := freePortRange(t, 3)
	g := New(Options{IPv4: net.IPv4(127, 0, 0, 1), MinPort: lo, MaxPort: hi})
	var conns []net.PacketConn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for i := 0; i < 3; i++ {
		c, _, err := g.AllocateUDP("udp4", 0, nil)
		if err != nil {
			t.Fatalf("allocation %d: %v", i, err)
		}
		conns = append(conns, c)
	}
	if _, _, err := g.AllocateUDP("udp4", 0, nil); !errors.Is(err, ErrNoFreePort) {
		t.Fatalf("fourth allocation: %v, want ErrNoFreePort", err)
	}
	if _, _, err := g.AllocateUDP("udp6", 0, nil); !errors.Is(err, ErrNoAddressForFamily) {
		t.Fatalf("udp6 without IPv6 relay: %v", err)
	}
}

func TestEvenPortsFirst(t *testing.T) {
	lo, hi := freePortRange(t, 8)
	g := New(Options{IPv4: net.IPv4(127, 0, 0, 1), MinPort: lo, MaxPort: hi})
	var conns []net.PacketConn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for i := 0; i < 8; i++ {
		c, addr, err := g.AllocateUDP("udp4", 0, nil)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
		if even := addr.(*net.UDPAddr).Port%2 == 0; even != (i < 4) {
			t.Fatalf("allocation %d got port %d: even ports must come first", i, addr.(*net.UDPAddr).Port)
		}
	}
}

func TestReservedPairHoldsTheOddPort(t *testing.T) {
	lo, hi := freePortRange(t, 6)
	g := New(Options{IPv4: net.IPv4(127, 0, 0, 1), MinPort: lo, MaxPort: hi})
	defer g.Close()
	conn, addr, err := g.AllocatePair("udp4", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	p := addr.(*net.UDPAddr).Port
	if p%2 != 0 {
		t.Fatalf("pair starts at odd port %d", p)
	}
	// Nobody else can take P+1 meanwhile...
	if c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: p + 1}); err == nil {
		c.Close()
		t.Fatalf("port %d was not held", p+1)
	}
	// ...but the reservation's own Allocate gets it.
	odd, oddAddr, err := g.AllocateUDP("udp4", p+1, nil)
	if err != nil {
		t.Fatalf("the reserved port: %v", err)
	}
	defer odd.Close()
	if oddAddr.(*net.UDPAddr).Port != p+1 {
		t.Fatalf("got %v, want port %d", oddAddr, p+1)
	}
}

// TestReservationEndsWithItsAllocation: the held P+1 of a pair is released
// when the allocation on P closes, not 30 s later: Allocate with EVEN-PORT
// and Refresh 0, repeated, must not pile up ports no quota counts. A P+1
// already handed to its token's allocation is not touched.
func TestReservationEndsWithItsAllocation(t *testing.T) {
	lo, hi := freePortRange(t, 6)
	g := New(Options{IPv4: net.IPv4(127, 0, 0, 1), MinPort: lo, MaxPort: hi})
	defer g.Close()
	conn, addr, err := g.AllocatePair("udp4", nil)
	if err != nil {
		t.Fatal(err)
	}
	p := addr.(*net.UDPAddr).Port
	if err := conn.Close(); err != nil {
		t.Fatal(err)
	}
	c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: p + 1})
	if err != nil {
		t.Fatalf("port %d still held after its allocation on %d closed: %v", p+1, p, err)
	}
	c.Close()

	conn, addr, err = g.AllocatePair("udp4", nil)
	if err != nil {
		t.Fatal(err)
	}
	p = addr.(*net.UDPAddr).Port
	odd, _, err := g.AllocateUDP("udp4", p+1, nil)
	if err != nil {
		t.Fatalf("the reserved port: %v", err)
	}
	defer odd.Close()
	if err := conn.Close(); err != nil {
		t.Fatal(err)
	}
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
	g := New(Options{IPv4: net.IPv4(127, 0, 0, 1), MinPort: lo, MaxPort: hi})
	odd, _, err := g.AllocateUDP("udp4", lo+1, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer odd.Close()
	for i := 0; i < 10; i++ {
		c, addr, err := g.AllocateUDP("udp4", 0, nil)
		if err != nil {
			t.Fatal(err)
		}
		port := addr.(*net.UDPAddr).Port
		c.Close()
		if port != lo+2 {
			t.Fatalf("got port %d, want %d (the even port whose partner is free)", port, lo+2)
		}
	}
}
