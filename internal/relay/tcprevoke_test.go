package relay

import (
	"errors"
	"io"
	"net"
	"net/netip"
	"sync/atomic"
	"testing"
	"time"

	"github.com/turnd/turnd/internal/bindings"
)

// tcpPeer is a TCP listener on ip whose accepted connections the test reads.
func tcpPeer(t *testing.T, ip string) (net.Listener, <-chan net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp4", net.JoinHostPort(ip, "0"))
	if err != nil {
		t.Fatal(err)
	}
	accepted := make(chan net.Conn, 4)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted <- c
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		for {
			select {
			case c := <-accepted:
				c.Close()
			default:
				return
			}
		}
	})
	return ln, accepted
}

func acceptedConn(t *testing.T, accepted <-chan net.Conn) net.Conn {
	t.Helper()
	select {
	case c := <-accepted:
		t.Cleanup(func() { c.Close() })
		return c
	case <-time.After(5 * time.Second):
		t.Fatal("no connection accepted within 5 s")
		return nil
	}
}

// wantClosed waits for c's other end to close it.
func wantClosed(t *testing.T, c net.Conn, what string) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Read(make([]byte, 1)); err == nil || errors.Is(err, net.ErrClosed) || isTimeout(err) {
		t.Fatalf("%s: read %v, want it closed by the relay", what, err)
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// dialFrom connects to the relay from ip.
func dialFrom(t *testing.T, ip string, relay *net.TCPAddr) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
	c, err := d.Dial("tcp4", relay.String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// TestTCPRelayRevokeDeniedPeer: a reload that denies a peer reaches RFC
// 6062 relays: the open peer connection to it is closed (the edge then
// closes the client's data connection), and a new connection from it is
// closed before the client is offered it; another peer's connections go
// on.
func TestTCPRelayRevokeDeniedPeer(t *testing.T) {
	deniedIP := netip.MustParseAddr("127.0.0.1")
	var denying atomic.Bool
	g := tcpTestRelay(t, 2, Options{Forbidden: func(a netip.AddrPort) bool {
		return denying.Load() && a.Addr() == deniedIP
	}})
	route, relay := allocateTCP(t, g)
	for _, ip := range []string{"127.0.0.1", "127.0.0.2"} {
		if err := g.permitAt(relay, net.ParseIP(ip), false); err != nil {
			t.Fatal(err)
		}
	}
	deniedLn, deniedAccepted := tcpPeer(t, "127.0.0.1")
	keptLn, keptAccepted := tcpPeer(t, "127.0.0.2")
	var relayed []net.Conn
	for _, peer := range []net.Addr{deniedLn.Addr(), keptLn.Addr()} {
		c, err := connect(g, route, peer)
		if err != nil {
			t.Fatalf("connect to %v: %v", peer, err)
		}
		t.Cleanup(func() { c.Close() })
		relayed = append(relayed, c)
	}
	deniedSide, keptSide := acceptedConn(t, deniedAccepted), acceptedConn(t, keptAccepted)

	denying.Store(true)
	// The table drops the permission (Table.Revoke), then the relay
	// closes the peer connections.
	if err := g.permitAt(relay, net.IP(deniedIP.AsSlice()), true); err != nil {
		t.Fatal(err)
	}
	g.Revoke(func(a netip.Addr) bool { return a == deniedIP })
	wantClosed(t, deniedSide, "connection to the denied peer")
	if _, err := relayed[1].Write([]byte("kept")); err != nil {
		t.Fatalf("write to the kept peer: %v", err)
	}
	_ = keptSide.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.ReadFull(keptSide, make([]byte, 4)); err != nil {
		t.Fatalf("the kept peer's connection: %v", err)
	}

	// A new connection from the denied peer is closed unseen; the kept
	// peer's, dialled after it, is the first offered.
	accepted := acceptAll(t, g, 2)
	wantClosed(t, dialFrom(t, "127.0.0.1", relay), "new connection from the denied peer")
	dialFrom(t, "127.0.0.2", relay)
	c := acceptedConn(t, accepted)
	if got := c.RemoteAddr().(*net.TCPAddr).IP.String(); got != "127.0.0.2" {
		t.Fatalf("offered a connection from %s, want 127.0.0.2", got)
	}
}

// TestTCPRelayStaleConnectFreesNoPlace: a peer connection that outlives
// its allocation, closing, must not free a pending place of the next
// allocation on the same port.
func TestTCPRelayStaleConnectFreesNoPlace(t *testing.T) {
	g := tcpTestRelay(t, 1, Options{})
	route, relay := allocateTCP(t, g)
	first, _ := tcpPeer(t, "127.0.0.1")
	stale, err := connect(g, route, first.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stale.Close() })
	g.Routes().Close(route, bindings.Both)
	next, again := allocateTCP(t, g)
	if again.Port != relay.Port {
		t.Fatalf("second allocation on port %d, want %d", again.Port, relay.Port)
	}
	second, _ := tcpPeer(t, "127.0.0.1")
	c, err := connect(g, next, second.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	_ = stale.Close()
	if n, _ := g.pendingOf(again); n != 1 {
		t.Fatalf("%d connects pending on the new allocation, want 1", n)
	}
}
