package server_test

import (
	"io"
	"net"
	"testing"
	"time"

	"github.com/pion/stun/v4"

	"github.com/turnd/turnd/internal/relay"
	"github.com/turnd/turnd/internal/testturn"
	"github.com/turnd/turnd/internal/traffic"
	"github.com/turnd/turnd/pkg/server"
)

// acceptingPeer is a TCP listener on loopback that accepts and holds whatever
// connects, until the test ends; accepted reports each connection.
func acceptingPeer(t *testing.T) (*net.TCPAddr, <-chan net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	accepted := make(chan net.Conn, 16)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { c.Close() })
			select {
			case accepted <- c:
			default:
			}
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		<-done
	})
	return ln.Addr().(*net.TCPAddr), accepted
}

// tcpRelayClient is a TCP client holding an RFC 6062 allocation.
func tcpRelayClient(t *testing.T, s *server.Server) *testturn.Client {
	t.Helper()
	c := dial(t, s, "tcp")
	if code := testturn.ErrorCode(c.AllocateTCP()); code != 0 {
		t.Fatalf("tcp allocation: %d", code)
	}
	return c
}

// wantCode checks a response's error code and signature.
func wantCode(t *testing.T, c *testturn.Client, resp *stun.Message, code int, what string) {
	t.Helper()
	if got := testturn.ErrorCode(resp); got != code {
		t.Fatalf("%s: code %d, want %d", what, got, code)
	}
	if code != 0 && !c.Signed(resp) {
		t.Errorf("%s: %d is not signed with the client's key", what, code)
	}
}

// TestConnectOverUDPDoesNotStallTheSocket: pion dials a Connect's peer on
// the goroutine that read it — over UDP, the socket's only read loop. The
// gate answers it 400 first (RFC 6062 §5.2), so a peer that drops SYNs
// stalls nobody, and another client of the socket is answered at once.
func TestConnectOverUDPDoesNotStallTheSocket(t *testing.T) {
	s := start(t, testOptions())
	silent := testturn.SilentPeer(t)
	a := dial(t, s, "udp")
	a.MustAllocate()
	wantCode(t, a, a.Connect(silent), 400, "Connect over UDP")
	b := dial(t, s, "udp")
	if b.BindingMapped() == nil {
		t.Fatal("no Binding answer for another client")
	}
	b.MustAllocate()
}

// TestConnectDialStallsOnlyItsClient: over TCP pion dials on the control
// connection's own goroutine; while a dial to a SYN-dropping peer hangs,
// other TCP and UDP clients are served.
func TestConnectDialStallsOnlyItsClient(t *testing.T) {
	s := start(t, testOptions())
	a := tcpRelayClient(t, s)
	a.StartConnect(testturn.SilentPeer(t))
	start := time.Now()
	tcpRelayClient(t, s)
	dial(t, s, "udp").MustAllocate()
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("other clients took %v while a dial hung", d)
	}
}

// TestConnectOnUDPAllocationRefused: a TCP client holding a UDP allocation
// got a raw TCP pipe to any peer, TCP relays off or not; now it gets 400
// and the peer sees no connection.
func TestConnectOnUDPAllocationRefused(t *testing.T) {
	opts := testOptions()
	opts.Config.Relay.TCPAllocations = false
	s := start(t, opts)
	peer, accepted := acceptingPeer(t)
	c := dial(t, s, "tcp")
	c.MustAllocate()
	wantCode(t, c, c.Connect(peer), 400, "Connect on a UDP allocation")
	select {
	case <-accepted:
		t.Fatal("the peer got a connection")
	case <-time.After(200 * time.Millisecond):
	}
}

// TestConnectToTurndItselfForbidden: with TCP relays on, a Connect to one
// of turnd's own sockets is 403, as a ChannelBind there is.
func TestConnectToTurndItselfForbidden(t *testing.T) {
	s := start(t, testOptions())
	c := tcpRelayClient(t, s)
	own := s.TCPAddrs()[0].(*net.TCPAddr)
	wantCode(t, c, c.Connect(own), 403, "Connect to turnd's own TCP listener")
}

// TestConnectWithoutAllocation: RFC 6062 §5.2 says 437 (pion said nothing).
func TestConnectWithoutAllocation(t *testing.T) {
	s := start(t, testOptions())
	peer, _ := acceptingPeer(t)
	c := dial(t, s, "tcp")
	wantCode(t, c, c.Connect(peer), 437, "Connect without an allocation")
}

// TestConnectAfterTCPRelaysSwitchedOff: an RFC 6062 allocation made before
// a reload that switches TCP relays off opens no new peer connections.
func TestConnectAfterTCPRelaysSwitchedOff(t *testing.T) {
	s := start(t, testOptions())
	peer, _ := acceptingPeer(t)
	c := tcpRelayClient(t, s)
	next := s.Config()
	next.Relay.TCPAllocations = false
	if _, err := s.Reload(next); err != nil {
		t.Fatalf("reload: %v", err)
	}
	wantCode(t, c, c.Connect(peer), 403, "Connect with TCP relays off")
}

// TestPendingConnectsBounded: an allocation has at most
// relay.MaxPendingConnects peer connections waiting for a ConnectionBind.
func TestPendingConnectsBounded(t *testing.T) {
	s := start(t, testOptions())
	c := tcpRelayClient(t, s)
	for i := 0; i < relay.MaxPendingConnects; i++ {
		peer, _ := acceptingPeer(t)
		wantCode(t, c, c.Connect(peer), 0, "Connect within the bound")
	}
	peer, _ := acceptingPeer(t)
	wantCode(t, c, c.Connect(peer), 508, "Connect past the bound")
}

// TestTCPRelayPortIsExclusive: with a one-port range, a second RFC 6062
// allocation, or a UDP one, finds the range full (508) instead of sharing
// the first one's port through SO_REUSEPORT.
func TestTCPRelayPortIsExclusive(t *testing.T) {
	opts := testOptions()
	port := testturn.FreePort(t)
	opts.Config.Relay.MinPort, opts.Config.Relay.MaxPort = port, port
	s := start(t, opts)
	tcpRelayClient(t, s)
	second := dial(t, s, "tcp")
	wantCode(t, second, second.AllocateTCP(), 508, "second tcp allocation")
	udp := dial(t, s, "udp")
	wantCode(t, udp, udp.Allocate(), 508, "udp allocation")
}

// TestTCPAllocationPermissionCap: limits.permissions_per_allocation holds
// for RFC 6062 allocations too.
func TestTCPAllocationPermissionCap(t *testing.T) {
	opts := testOptions()
	opts.Config.Limits.PermissionsPerAllocation = 1
	s := start(t, opts)
	c := tcpRelayClient(t, s)
	first := &net.UDPAddr{IP: net.IPv4(127, 0, 0, 10), Port: 5000}
	if code := c.Permit(first); code != 0 {
		t.Fatalf("first permission: %d", code)
	}
	resp := c.Request(stun.MethodCreatePermission, testturn.PeerAddr(&net.UDPAddr{IP: net.IPv4(127, 0, 0, 11), Port: 5000}))
	wantCode(t, c, resp, 508, "second permission past the cap")
}

// TestIdleTimeoutAfterRelease: a TCP connection whose allocation is gone
// (Refresh 0) is idle again and is closed after the idle timeout.
func TestIdleTimeoutAfterRelease(t *testing.T) {
	// Long enough that dial, 401 and Allocate fit in it on a loaded machine
	// under -race: the first check must see the deadline the allocation
	// cleared, not one that fired before the allocation was made.
	const idle = 2 * time.Second
	opts := testOptions()
	opts.Config.Limits.IdleConnectionTimeout = idle
	s := start(t, opts)
	c := dial(t, s, "tcp")
	c.MustAllocate()
	if c.WaitClosed(idle + 500*time.Millisecond) {
		t.Fatal("a connection holding an allocation was closed")
	}
	if code := c.Refresh(0); code != 0 {
		t.Fatalf("refresh 0: %d", code)
	}
	if !c.WaitClosed(idle + 3*time.Second) {
		t.Fatal("connection still open 3 s past the idle timeout after its allocation was released")
	}
}

// TestDataConnectionEndsWithAllocation: an RFC 6062 data connection does
// not outlive its allocation.
func TestDataConnectionEndsWithAllocation(t *testing.T) {
	s := start(t, testOptions())
	peer, accepted := acceptingPeer(t)
	c := tcpRelayClient(t, s)
	id := connectID(t, c, peer)
	select {
	case <-accepted:
	case <-time.After(waitTimeout):
		t.Fatal("peer saw no connection")
	}
	data := dial(t, s, "tcp")
	wantCode(t, data, data.Request(stun.MethodConnectionBind, testturn.RawAttr(stun.AttrConnectionID, id)), 0, "ConnectionBind")
	if code := c.Refresh(0); code != 0 {
		t.Fatalf("refresh 0: %d", code)
	}
	if !data.WaitClosed(3 * time.Second) {
		t.Fatal("data connection still open 3 s after its allocation was deleted")
	}
}

// TestConnectionBindOnControlConnection: a ConnectionBind on a connection
// holding an allocation is 400 (RFC 6062 §5.4) even with a live
// CONNECTION-ID: pion would turn the control connection into the pipe.
func TestConnectionBindOnControlConnection(t *testing.T) {
	s := start(t, testOptions())
	peer, _ := acceptingPeer(t)
	c := tcpRelayClient(t, s)
	id := connectID(t, c, peer)
	resp := c.Request(stun.MethodConnectionBind, testturn.RawAttr(stun.AttrConnectionID, id))
	wantCode(t, c, resp, 400, "ConnectionBind on the control connection")
	if code := c.Refresh(time.Minute); code != 0 {
		t.Fatalf("refresh after the refused bind: %d", code)
	}
}

// TestPeerConnectsToTCPRelay: a permitted peer that connects to the relay
// is offered to the client (ConnectionAttempt), bound on a data
// connection, and its bytes reach the client raw.
func TestPeerConnectsToTCPRelay(t *testing.T) {
	s := start(t, testOptions())
	c := dial(t, s, "tcp")
	resp := c.AllocateTCP()
	wantCode(t, c, resp, 0, "tcp allocation")
	relayAddr := testturn.Relayed(t, resp)
	if code := c.Permit(&net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)}); code != 0 {
		t.Fatalf("permission: %d", code)
	}
	peer, err := net.Dial("tcp4", (&net.TCPAddr{IP: relayAddr.IP, Port: relayAddr.Port}).String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { peer.Close() })
	attempt := c.Indication(stun.MethodConnectionAttempt, waitTimeout)
	id, err := attempt.Get(stun.AttrConnectionID)
	if err != nil {
		t.Fatalf("ConnectionAttempt without CONNECTION-ID: %v", err)
	}
	data := dial(t, s, "tcp")
	wantCode(t, data, data.Request(stun.MethodConnectionBind, testturn.RawAttr(stun.AttrConnectionID, id)), 0, "ConnectionBind")
	if _, err := peer.Write([]byte("from the peer")); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len("from the peer"))
	_ = data.Conn().SetReadDeadline(time.Now().Add(waitTimeout))
	if _, err := io.ReadFull(data.Conn(), got); err != nil || string(got) != "from the peer" {
		t.Fatalf("client read %q (%v)", got, err)
	}
}

// connectID has c Connect to peer (RFC 6062 §5.2) and returns the
// CONNECTION-ID of the success, which a data connection binds.
func connectID(t *testing.T, c *testturn.Client, peer net.Addr) []byte {
	t.Helper()
	resp := c.Connect(peer)
	wantCode(t, c, resp, 0, "Connect")
	id, err := resp.Get(stun.AttrConnectionID)
	if err != nil {
		t.Fatalf("no CONNECTION-ID: %v", err)
	}
	return id
}

// TestInboundPeerWithoutPermissionIsCounted: a host without permission
// that connects to a TCP allocation's relay port again and again is
// closed each time by the relay: every connection is counted
// (turnd_peer_connections_refused_total{reason="no_permission"}) and none
// writes a line. A permitted peer connecting after them is still offered.
func TestInboundPeerWithoutPermissionIsCounted(t *testing.T) {
	const conns = 500
	var log lineLog
	opts := testOptions()
	opts.Logger = log.logger()
	tr := &traffic.Counters{}
	opts.Traffic = tr
	s := start(t, opts)
	c := dial(t, s, "tcp")
	resp := c.AllocateTCP()
	wantCode(t, c, resp, 0, "tcp allocation")
	relay := testturn.Relayed(t, resp)
	relayAddr := (&net.TCPAddr{IP: relay.IP, Port: relay.Port}).String()

	// The peers dial from other loopback addresses than turnd's: an
	// ephemeral port equal to turnd's UDP port would name one of turnd's
	// own sockets, which the relay refuses for that reason instead.
	dialFrom := func(ip net.IP) net.Conn {
		t.Helper()
		d := net.Dialer{Timeout: waitTimeout, LocalAddr: &net.TCPAddr{IP: ip}}
		peer, err := d.Dial("tcp4", relayAddr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { peer.Close() })
		return peer
	}
	// knock connects without permission and waits until turnd closes it.
	knock := func() {
		t.Helper()
		peer := dialFrom(net.IPv4(127, 0, 0, 2))
		_ = peer.SetReadDeadline(time.Now().Add(waitTimeout))
		if _, err := peer.Read(make([]byte, 1)); err == nil {
			t.Fatal("a peer without permission was not closed")
		}
		_ = peer.Close()
	}
	for range conns {
		knock()
	}
	want := [traffic.NumPeerRefusals]uint64{traffic.PeerNoPermission: conns}
	var got [traffic.NumPeerRefusals]uint64
	for r := range got {
		got[r] = tr.PeerConnsRefused[r].Load()
	}
	if got != want {
		t.Fatalf("%d knocks without permission counted as refused peer connections %v, want %v", conns, got, want)
	}

	// The relay accepts a relay's peers one at a time, in order: once the
	// permitted peer is offered, any line written for the knocks before it
	// has been written.
	if code := c.Permit(&net.UDPAddr{IP: net.IPv4(127, 0, 0, 3)}); code != 0 {
		t.Fatalf("permission: %d", code)
	}
	dialFrom(net.IPv4(127, 0, 0, 3))
	c.Indication(stun.MethodConnectionAttempt, waitTimeout)
	const line = "no permission for inbound peer"
	if lines := log.containing(line); len(lines) != 0 {
		t.Fatalf("%d knocks made %d %q lines; want none", conns, len(lines), line)
	}
}
