package relay

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/turnd/turnd/internal/bindings"
	"github.com/turnd/turnd/internal/netaddr"
	"github.com/turnd/turnd/internal/testturn"
	"github.com/turnd/turnd/internal/traffic"
)

// tcpTest is what a test relay's RFC 6062 side tells the test: the peers
// its listeners accepted (PeerArrived), and the CONNECTION-IDs it gives.
type tcpTest struct {
	arrived chan arrival
	ids     atomic.Uint32
}

// arrival is a peer connection held for r under id.
type arrival struct {
	r  *bindings.Route
	id uint32
}

// tcpTests finds each test relay's tcpTest.
var tcpTests sync.Map // *Relay → *tcpTest

func tcpTestRelay(t *testing.T, ports int, opts Options) *Relay {
	t.Helper()
	lo, hi := freePortRange(t, ports)
	opts.IPv4, opts.MinPort, opts.MaxPort = net.IPv4(127, 0, 0, 1), lo, hi
	tt := &tcpTest{arrived: make(chan arrival, 64)}
	if opts.PeerArrived == nil { // the test's own, else acceptAll's
		opts.PeerArrived = tt.peerArrived
	}
	g := New(opts)
	tcpTests.Store(g, tt)
	t.Cleanup(func() { g.Close(); tcpTests.Delete(g) })
	return g
}

// peerArrived hands acceptAll the peer connection r's listener accepted.
func (tt *tcpTest) peerArrived(r *bindings.Route, _ netip.AddrPort) (uint32, bool) {
	a := arrival{r: r, id: tt.ids.Add(1)}
	select {
	case tt.arrived <- a:
		return a.id, true
	default:
		return 0, false // never blocks the loop
	}
}

func tcpTestOf(g *Relay) *tcpTest {
	tt, _ := tcpTests.Load(g)
	return tt.(*tcpTest)
}

// allocateTCP opens an RFC 6062 relay for a fresh TCP client route, as the
// Allocate handler does.
func allocateTCP(t *testing.T, g *Relay) (*bindings.Route, *net.TCPAddr) {
	t.Helper()
	return openTCP(t, g)
}

// connect is a Connect request on r to peer, waited for: the peer
// connection once it waits for its ConnectionBind, taken as the
// ConnectionBind handler takes it.
func connect(g *Relay, r *bindings.Route, peer net.Addr) (net.Conn, error) {
	id := tcpTestOf(g).ids.Add(1)
	done := make(chan error, 1)
	if err := g.Routes().Connect(r, netaddr.AddrPort(peer), id, func(err error) { done <- err }); err != nil {
		return nil, err
	}
	if err := <-done; err != nil {
		return nil, err
	}
	c, ok := g.Routes().TakePeer(r, id)
	if !ok {
		return nil, fmt.Errorf("connect to %v: %w", peer, ErrNotTracked)
	}
	return c.(net.Conn), nil
}

// TestTCPRelayPortBelongsToOneAllocation: the listener's SO_REUSEPORT would
// let the kernel give a second allocation the same port (and split the
// first one's peers between them); the port table refuses it, for TCP and
// UDP relays alike, and gives the port back when the listener closes.
func TestTCPRelayPortBelongsToOneAllocation(t *testing.T) {
	g := tcpTestRelay(t, 1, Options{})
	route, _ := allocateTCP(t, g)
	other := func(tcp bool) (bindings.Relayed, error) {
		r := &bindings.Route{Client: bindings.Client{Stream: nopStream{}}}
		r.Client.Tuple = netaddr.FiveTuple{Client: netip.MustParseAddrPort("127.0.0.1:40001"),
			Server: netip.MustParseAddrPort("127.0.0.1:3478"), TCP: true}
		got, err := g.Routes().Open(r, bindings.Want{Families: bindings.V4, TCP: tcp})
		if err == nil {
			g.Routes().Close(r, bindings.Both)
		}
		return got, err
	}
	if got, err := other(true); err == nil {
		t.Fatalf("second tcp relay got %v, the port of the first", got.Addr[0])
	} else if !errors.Is(err, ErrNoFreePort) {
		t.Fatalf("second tcp relay: %v, want ErrNoFreePort", err)
	}
	if got, err := other(false); err == nil {
		t.Fatalf("udp relay got %v, the port of a tcp relay", got.Addr[0])
	}
	g.Routes().Close(route, bindings.Both)
	allocateTCP(t, g)
}

// TestTCPRelayConnectHasDeadline: a peer that drops SYNs fails the dial at
// the timeout (answered 447), not after the kernel's two minutes.
func TestTCPRelayConnectHasDeadline(t *testing.T) {
	const timeout = 300 * time.Millisecond
	g := tcpTestRelay(t, 2, Options{ConnectTimeout: timeout})
	route, relay := allocateTCP(t, g)
	peer := testturn.SilentPeer(t)
	done := make(chan error, 1)
	began := time.Now()
	go func() {
		c, err := connect(g, route, peer)
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
// connections wait for their ConnectionBind; one that the client's pipe
// starts copying (bound) or closes frees its place.
func TestTCPRelayPendingConnectsBounded(t *testing.T) {
	g := tcpTestRelay(t, 2, Options{})
	route, relay := allocateTCP(t, g)
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
	connectTo := func(i int) (net.Conn, error) {
		return connect(g, route, peers[i])
	}
	for i := 0; i < MaxPendingConnects; i++ {
		c, err := connectTo(i)
		if err != nil {
			t.Fatalf("connect %d: %v", i, err)
		}
		conns = append(conns, c)
	}
	if c, err := connectTo(MaxPendingConnects); !errors.Is(err, ErrTooManyConnects) {
		if c != nil {
			c.Close()
		}
		t.Fatalf("connect past the bound: %v, want ErrTooManyConnects", err)
	}
	_ = conns[0].Close()
	_ = conns[1].SetReadDeadline(time.Now())
	_, _ = conns[1].Read(make([]byte, 1)) // the pipe copying: bound
	if n, _ := g.pendingOf(relay); n != MaxPendingConnects-2 {
		t.Fatalf("%d pending, want %d", n, MaxPendingConnects-2)
	}
	c, err := connectTo(MaxPendingConnects + 1)
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
	route, _ := allocateTCP(t, g)
	c, err := connect(g, route, own.Addr())
	if !errors.Is(err, ErrForbiddenPeer) {
		if c != nil {
			c.Close()
		}
		t.Fatalf("connect to an own socket: %v, want ErrForbiddenPeer", err)
	}
}

// TestTCPRelayPendingPeerConnectionsBounded: peers connecting to a TCP
// relay count against the same bound; past it their connections are
// closed before the client is offered them, and counted.
func TestTCPRelayPendingPeerConnectionsBounded(t *testing.T) {
	g := tcpTestRelay(t, 2, Options{})
	_, relay := allocateTCP(t, g)
	if err := g.permitAt(relay, net.IPv4(127, 0, 0, 1), false); err != nil {
		t.Fatal(err)
	}
	accepted := acceptAll(t, g, MaxPendingConnects+2)
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
		t.Fatal("a peer connection past the bound was offered")
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
// forbids, are closed before the client is offered them, each refusal
// counted by reason; a permitted peer's connection is the one offered.
func TestTCPRelayRefusesPeersWithoutPermission(t *testing.T) {
	forbidden := netip.MustParseAddr("127.0.0.3")
	g := tcpTestRelay(t, 2, Options{Forbidden: func(a netip.AddrPort) bool { return a.Addr() == forbidden }})
	_, relay := allocateTCP(t, g)
	for _, ip := range []string{"127.0.0.1", "127.0.0.3"} {
		if err := g.permitAt(relay, net.ParseIP(ip), false); err != nil {
			t.Fatal(err)
		}
	}
	accepted := acceptAll(t, g, 4)
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
		t.Fatalf("offered a connection from %s, want the permitted 127.0.0.1", got)
	}
	if n, _ := g.pendingOf(relay); n != 1 {
		t.Fatalf("%d pending, want 1: refused peers must take no place", n)
	}
}

// acceptAll hands every peer connection g's listeners accept to the
// channel it returns (buffered for n), taken as ConnectionBind takes it,
// until the test ends.
func acceptAll(t *testing.T, g *Relay, n int) <-chan net.Conn {
	accepted := make(chan net.Conn, n)
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop) })
	tt := tcpTestOf(g)
	go func() {
		for {
			select {
			case a := <-tt.arrived:
				// PeerArrived runs just before the loop holds the
				// connection: wait for it, bounded.
				deadline := time.Now().Add(5 * time.Second)
				for time.Now().Before(deadline) {
					if c, ok := g.Routes().TakePeer(a.r, a.id); ok {
						accepted <- c.(net.Conn)
						break
					}
					runtime.Gosched()
				}
			case <-stop:
				return
			}
		}
	}()
	return accepted
}
