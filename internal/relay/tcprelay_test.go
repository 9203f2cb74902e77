package relay

import (
	"errors"
	"net"
	"net/netip"
	"os"
	"testing"
	"time"

	"github.com/turnd/turnd/internal/netaddr"
	"github.com/turnd/turnd/internal/testturn"
	"github.com/turnd/turnd/internal/traffic"
)

func tcpTestRelay(t *testing.T, ports int, opts Options) *Relay {
	t.Helper()
	lo, hi := freePortRange(t, ports)
	opts.IPv4, opts.MinPort, opts.MaxPort = net.IPv4(127, 0, 0, 1), lo, hi
	g := New(opts)
	t.Cleanup(g.Close)
	return g
}

func allocateTCP(t *testing.T, g *Relay) (net.Listener, *net.TCPAddr) {
	t.Helper()
	ln, addr, err := g.AllocateTCP("tcp4", 0)
	if err != nil {
		t.Fatalf("allocate tcp relay: %v", err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	return ln, addr.(*net.TCPAddr)
}

// TestTCPRelayPortBelongsToOneAllocation: the listener's SO_REUSEPORT would
// let the kernel give a second allocation the same port (and split the
// first one's peers between them); the port table refuses it, for TCP and
// UDP relays alike, and gives the port back when the listener closes.
func TestTCPRelayPortBelongsToOneAllocation(t *testing.T) {
	g := tcpTestRelay(t, 1, Options{})
	ln, _ := allocateTCP(t, g)
	if ln2, addr, err := g.AllocateTCP("tcp4", 0); err == nil {
		_ = ln2.Close()
		t.Fatalf("second tcp relay got %v, the port of the first", addr)
	} else if !errors.Is(err, ErrNoFreePort) {
		t.Fatalf("second tcp relay: %v, want ErrNoFreePort", err)
	}
	if pc, addr, err := g.AllocateUDP("udp4", 0, nil); err == nil {
		_ = pc.Close()
		t.Fatalf("udp relay got %v, the port of a tcp relay", addr)
	}
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	allocateTCP(t, g)
}

// TestTCPRelayConnectHasDeadline: a peer that drops SYNs fails the dial at
// the timeout (pion answers 447), not after the kernel's two minutes.
func TestTCPRelayConnectHasDeadline(t *testing.T) {
	const timeout = 300 * time.Millisecond
	g := tcpTestRelay(t, 2, Options{ConnectTimeout: timeout})
	_, relay := allocateTCP(t, g)
	peer := testturn.SilentPeer(t)
	done := make(chan error, 1)
	began := time.Now()
	go func() {
		c, err := g.Connect("tcp4", relay, peer)
		if c != nil {
			_ = c.Close()
		}
		done <- err
	}()
	select {
	case err := <-done:
		// A refusal or any other quick failure would pass "err != nil"
		// without the deadline ever being reached.
		var ne net.Error
		if !errors.As(err, &ne) || !ne.Timeout() {
			t.Fatalf("connect to a silent peer: %v, want a timeout", err)
		}
		if took := time.Since(began); took < timeout {
			t.Fatalf("connect failed after %v, before the %v timeout", took, timeout)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("connect to a silent peer still dialling after 5 s")
	}
	if n, _ := g.pendingOf(relay); n != 0 {
		t.Fatalf("%d connects pending after the failure, want 0", n)
	}
}

// pendingOf reads a relay's pending count by its port, for tests.
func (g *Relay) pendingOf(relay *net.TCPAddr) (int, bool) {
	k, _ := tcpKey(relay)
	g.mu.Lock()
	defer g.mu.Unlock()
	r := g.tcp[k]
	if r == nil {
		return 0, false
	}
	return r.pending, true
}

// TestTCPRelayPendingConnectsBounded: at most MaxPendingConnects peer
// connections wait for their ConnectionBind; one that pion starts copying
// (bound) or closes frees its place.
func TestTCPRelayPendingConnectsBounded(t *testing.T) {
	g := tcpTestRelay(t, 2, Options{})
	_, relay := allocateTCP(t, g)
	// One peer per Connect: a relay port reaches a peer address once.
	peers := make([]net.Addr, MaxPendingConnects+2)
	for i := range peers {
		ln, err := net.Listen("tcp4", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ln.Close() })
		peers[i] = ln.Addr()
	}
	var conns []net.Conn
	t.Cleanup(func() {
		for _, c := range conns {
			c.Close()
		}
	})
	connect := func(i int) (net.Conn, error) {
		return g.Connect("tcp4", relay, peers[i])
	}
	for i := 0; i < MaxPendingConnects; i++ {
		c, err := connect(i)
		if err != nil {
			t.Fatalf("connect %d: %v", i, err)
		}
		conns = append(conns, c)
	}
	if c, err := connect(MaxPendingConnects); !errors.Is(err, ErrTooManyConnects) {
		if c != nil {
			c.Close()
		}
		t.Fatalf("connect past the bound: %v, want ErrTooManyConnects", err)
	}
	_ = conns[0].Close()
	_ = conns[1].SetReadDeadline(time.Now())
	_, _ = conns[1].Read(make([]byte, 1)) // pion copying: bound
	if n, _ := g.pendingOf(relay); n != MaxPendingConnects-2 {
		t.Fatalf("%d pending, want %d", n, MaxPendingConnects-2)
	}
	c, err := connect(MaxPendingConnects + 1)
	if err != nil {
		t.Fatalf("connect after one closed: %v", err)
	}
	conns = append(conns, c)
}

// TestTCPRelayConnectRefusesOwnSockets: a Connect to one of turnd's own
// sockets is refused however the peer filter is set.
func TestTCPRelayConnectRefusesOwnSockets(t *testing.T) {
	own, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer own.Close()
	ownAP := own.Addr().(*net.TCPAddr).AddrPort()
	g := tcpTestRelay(t, 2, Options{Forbidden: func(a netip.AddrPort) bool { return a == ownAP }})
	_, relay := allocateTCP(t, g)
	c, err := g.Connect("tcp4", relay, own.Addr())
	if !errors.Is(err, ErrForbiddenPeer) {
		if c != nil {
			c.Close()
		}
		t.Fatalf("connect to an own socket: %v, want ErrForbiddenPeer", err)
	}
}

// TestTCPRelayCountsBindings: permissions and channels of an RFC 6062
// relay are counted for its client, so their caps apply to it too.
func TestTCPRelayCountsBindings(t *testing.T) {
	g := tcpTestRelay(t, 2, Options{})
	_, relay := allocateTCP(t, g)
	client := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 40001}
	server := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 3478}
	if err := g.AttachClient(relay, client, server, nil); err != nil {
		t.Fatal(err)
	}
	for _, ip := range []string{"192.0.2.1", "192.0.2.2"} {
		if err := g.Permit(relay, net.ParseIP(ip), false); err != nil {
			t.Fatal(err)
		}
	}
	_ = g.BindChannel(relay, &net.UDPAddr{IP: net.ParseIP("192.0.2.1"), Port: 9}, 0x4000, false)
	n, has, ok := g.Permissions(netaddr.Of(client, server))
	if !ok || n != 2 || !has(netip.MustParseAddr("192.0.2.2")) || has(netip.MustParseAddr("192.0.2.3")) {
		t.Fatalf("permissions: n=%d ok=%v", n, ok)
	}
	if n, has, ok := g.Channels(netaddr.Of(client, server)); !ok || n != 1 || !has(0x4000) {
		t.Fatalf("channels: n=%d ok=%v", n, ok)
	}
	if n, ok := g.PendingConnects(netaddr.Of(client, server)); !ok || n != 0 {
		t.Fatalf("pending connects: n=%d ok=%v", n, ok)
	}
}

// TestTCPRelayPendingPeerConnectionsBounded: peers connecting to a TCP
// relay count against the same bound; past it their connections are
// closed before pion sees them, and counted.
func TestTCPRelayPendingPeerConnectionsBounded(t *testing.T) {
	g := tcpTestRelay(t, 2, Options{})
	ln, relay := allocateTCP(t, g)
	if err := g.Permit(relay, net.IPv4(127, 0, 0, 1), false); err != nil {
		t.Fatal(err)
	}
	accepted := acceptAll(ln, MaxPendingConnects+2)
	dialRelay := func() net.Conn {
		c, err := net.Dial("tcp4", relay.String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	var held []net.Conn
	for i := 0; i < MaxPendingConnects; i++ {
		dialRelay()
		select {
		case c := <-accepted:
			held = append(held, c)
			t.Cleanup(func() { c.Close() })
		case <-time.After(5 * time.Second):
			t.Fatalf("peer connection %d not accepted", i)
		}
	}
	extra := dialRelay()
	_ = extra.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := extra.Read(make([]byte, 1)); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("peer connection past the bound: read %v, want it closed", err)
	}
	select {
	case c := <-accepted:
		c.Close()
		t.Fatal("a peer connection past the bound reached pion")
	default:
	}
	if got := refusedPeers(g); got != [traffic.NumPeerRefusals]uint64{traffic.PeerPendingLimit: 1} {
		t.Fatalf("refused peer connections %v, want one past the pending limit", got)
	}
	_ = held[0].Close()
	dialRelay()
	select {
	case c := <-accepted:
		t.Cleanup(func() { c.Close() })
	case <-time.After(5 * time.Second):
		t.Fatal("peer connection after one closed not accepted")
	}
}

// refusedPeers reads the relay's refused peer connections by reason.
func refusedPeers(g *Relay) (n [traffic.NumPeerRefusals]uint64) {
	for r := range n {
		n[r] = g.Counters().PeerConnsRefused[r].Load()
	}
	return n
}

// TestTCPRelayRefusesPeersWithoutPermission: a peer with no permission
// mirrored for the allocation, and a permitted peer the peer filter
// forbids, are closed before pion sees them, each refusal counted by
// reason; a permitted peer's connection is the one Accept returns.
func TestTCPRelayRefusesPeersWithoutPermission(t *testing.T) {
	forbidden := netip.MustParseAddr("127.0.0.3")
	g := tcpTestRelay(t, 2, Options{Forbidden: func(a netip.AddrPort) bool { return a.Addr() == forbidden }})
	ln, relay := allocateTCP(t, g)
	for _, ip := range []string{"127.0.0.1", "127.0.0.3"} {
		if err := g.Permit(relay, net.ParseIP(ip), false); err != nil {
			t.Fatal(err)
		}
	}
	accepted := acceptAll(ln, 4)
	const knocks = 5
	for range knocks {
		wantClosed(t, dialFrom(t, "127.0.0.2", relay), "connection from a peer without permission")
	}
	wantClosed(t, dialFrom(t, "127.0.0.3", relay), "connection from a forbidden peer")
	want := [traffic.NumPeerRefusals]uint64{traffic.PeerNoPermission: knocks, traffic.PeerForbidden: 1}
	if got := refusedPeers(g); got != want {
		t.Fatalf("refused peer connections %v, want %v", got, want)
	}
	dialFrom(t, "127.0.0.1", relay)
	c := acceptedConn(t, accepted)
	if got := c.RemoteAddr().(*net.TCPAddr).IP.String(); got != "127.0.0.1" {
		t.Fatalf("Accept returned a connection from %s, want the permitted 127.0.0.1", got)
	}
	if n, _ := g.pendingOf(relay); n != 1 {
		t.Fatalf("%d pending, want 1: refused peers must take no place", n)
	}
}

// acceptAll hands every connection ln accepts to the channel it returns
// (buffered for n), which is closed when ln is.
func acceptAll(ln net.Listener, n int) <-chan net.Conn {
	accepted := make(chan net.Conn, n)
	go func() {
		defer close(accepted)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted <- c
		}
	}()
	return accepted
}
