package relay

import (
	"errors"
	"io"
	"net"
	"net/netip"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/turnd/turnd/internal/bindings"
	"github.com/turnd/turnd/internal/traffic"
)

// nopStream is a TCP client's control connection: the RFC 6062 tests only
// need the relay to know it is a stream.
type nopStream struct{}

func (nopStream) Write(b []byte) (int, error) { return len(b), nil }
func (nopStream) TryWritev([][]byte) bool     { return true }
func (nopStream) Idle(bool)                   {}
func (nopStream) Pipe(io.ReadWriteCloser)     {}
func (nopStream) Close() error                { return nil }

// openTCP opens an RFC 6062 relay for a fresh route of a TCP client.
func openTCP(t *testing.T, rl *Relay) (*bindings.Route, *net.TCPAddr) {
	t.Helper()
	r := &bindings.Route{Client: bindings.Client{Stream: nopStream{}}}
	r.Client.Tuple.Client = netip.MustParseAddrPort("127.0.0.1:40000")
	r.Client.Tuple.Server = netip.MustParseAddrPort("127.0.0.1:3478")
	r.Client.Tuple.TCP = true
	got, err := rl.Routes().Open(r, bindings.Want{Families: bindings.V4, TCP: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rl.Routes().Close(r, bindings.Both) })
	return r, net.TCPAddrFromAddrPort(got.Addr[0])
}

// exchange writes each way once between a taken peer connection and the
// peer's end of it.
func exchange(t *testing.T, taken io.ReadWriter, peer net.Conn) {
	t.Helper()
	if _, err := taken.Write([]byte("to")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 2)
	_ = peer.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.ReadFull(peer, buf); err != nil || string(buf) != "to" {
		t.Fatalf("peer read %q (%v)", buf, err)
	}
	if _, err := peer.Write([]byte("fr")); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(taken, buf); err != nil || string(buf) != "fr" {
		t.Fatalf("relay side read %q (%v)", buf, err)
	}
}

// TestOpenTCPConnectAndTakePeer: Connect dials from the relayed port off
// the caller's goroutine and reports the outcome to done; the connection
// then waits under its CONNECTION-ID for TakePeer, once, and its bytes are
// counted in the route's tally. Checks that need no dial fail at once.
func TestOpenTCPConnectAndTakePeer(t *testing.T) {
	rl := tcpTestRelay(t, 4, Options{Forbidden: func(a netip.AddrPort) bool { return a.Port() == 3478 }})
	r, relayed := openTCP(t, rl)
	ln, accepted := tcpPeer(t, "127.0.0.1")
	peer := ln.Addr().(*net.TCPAddr).AddrPort()
	r.SetPermissions([]netip.Addr{peer.Addr()})

	done := make(chan error, 1)
	if err := rl.Routes().Connect(r, peer, 7, func(err error) { done <- err }); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("connect: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("done not called")
	}
	pc := acceptedConn(t, accepted)
	if from := pc.RemoteAddr().(*net.TCPAddr); from.Port != relayed.Port {
		t.Fatalf("peer connection from %v, want from the relayed port %d", from, relayed.Port)
	}
	taken, ok := rl.Routes().TakePeer(r, 7)
	if !ok {
		t.Fatal("the connected peer is not waiting under its id")
	}
	defer taken.Close()
	if _, again := rl.Routes().TakePeer(r, 7); again {
		t.Fatal("a peer connection was taken twice")
	}
	exchange(t, taken, pc)
	if u := r.Usage.Usage(); u.ToPeerBytes != 2 || u.FromPeerBytes != 2 {
		t.Fatalf("route usage %+v, want 2 bytes each way", u)
	}

	never := func(err error) { t.Errorf("done called with %v for a Connect refused at once", err) }
	if err := rl.Routes().Connect(r, netip.MustParseAddrPort("127.0.0.1:3478"), 8, never); !errors.Is(err, ErrForbiddenPeer) {
		t.Errorf("connect to turnd itself: %v, want ErrForbiddenPeer", err)
	}
	if err := rl.Routes().Connect(r, netip.MustParseAddrPort("[::1]:9"), 8, never); !errors.Is(err, ErrNotTracked) {
		t.Errorf("connect to an IPv6 peer from an IPv4 relay: %v, want ErrNotTracked", err)
	}

	ln2, accepted2 := tcpPeer(t, "127.0.0.1") // another port of the permitted IP
	if err := rl.Routes().Connect(r, ln2.Addr().(*net.TCPAddr).AddrPort(), 9, func(err error) { done <- err }); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("second connect: %v", err)
	}
	untaken := acceptedConn(t, accepted2)

	// A pipe's reader is blocked in Read when its allocation ends: the
	// close must wake it, and reach the peer.
	blocked := make(chan error, 1)
	go func() {
		_, err := taken.Read(make([]byte, 1))
		blocked <- err
	}()
	rl.Routes().Close(r, bindings.Both)
	select {
	case err := <-blocked:
		if err == nil {
			t.Fatal("a taken peer connection still reads after its route closed")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a Read blocked on a taken peer connection outlives its route")
	}
	wantClosed(t, pc, "the peer of a taken connection, its route closed")
	wantClosed(t, untaken, "a peer connection nobody took, its route closed")
}

// TestPeerArrived: a peer connecting to a route's RFC 6062 listener is
// admitted by the route's permissions, offered through PeerArrived with
// the route and its address, and waits for TakePeer under the id it gave;
// a peer without a permission, or one PeerArrived refuses, is closed.
func TestPeerArrived(t *testing.T) {
	type arrival struct {
		r    *bindings.Route
		peer netip.AddrPort
	}
	arrived := make(chan arrival, 4)
	var refuse atomic.Bool
	rl := tcpTestRelay(t, 4, Options{PeerArrived: func(r *bindings.Route, peer netip.AddrPort) (uint32, bool) {
		arrived <- arrival{r, peer}
		return 9, !refuse.Load()
	}})
	r, relayed := openTCP(t, rl)
	r.SetPermissions([]netip.Addr{netip.MustParseAddr("127.0.0.1")})

	stranger := dialFrom(t, "127.0.0.2", relayed)
	wantClosed(t, stranger, "a peer without a permission")
	if n := refusedPeers(rl)[traffic.PeerNoPermission]; n != 1 {
		t.Fatalf("%d peers refused for want of a permission, want 1", n)
	}

	c := dialFrom(t, "127.0.0.1", relayed)
	var a arrival
	select {
	case a = <-arrived:
	case <-time.After(5 * time.Second):
		t.Fatal("PeerArrived not called")
	}
	if a.r != r || a.peer != c.LocalAddr().(*net.TCPAddr).AddrPort() {
		t.Fatalf("PeerArrived(%p, %v), want (%p, %v)", a.r, a.peer, r, c.LocalAddr())
	}
	// The relay records the peer once PeerArrived has returned, which the
	// test cannot observe: a bounded wait for it.
	var taken io.ReadWriteCloser
	for deadline := time.Now().Add(5 * time.Second); ; {
		var ok bool
		if taken, ok = rl.Routes().TakePeer(r, 9); ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the arrived peer is not waiting under id 9")
		}
		time.Sleep(time.Millisecond)
	}
	defer taken.Close()
	exchange(t, taken, c)

	refuse.Store(true)
	refused := dialFrom(t, "127.0.0.1", relayed)
	<-arrived
	wantClosed(t, refused, "a peer PeerArrived refused")
}

// TestOpenTCPCostsNoGoroutine: an RFC 6062 relay's listener is watched by
// a downlink loop, so TCP allocations waiting for peers hold no goroutine
// each; closing them leaves none behind.
func TestOpenTCPCostsNoGoroutine(t *testing.T) {
	rl := tcpTestRelay(t, 8, Options{})
	openTCP(t, rl) // starts the loops
	before := runtime.NumGoroutine()
	routes := make([]*bindings.Route, 5)
	for i := range routes {
		routes[i], _ = openTCP(t, rl)
	}
	if n := runtime.NumGoroutine(); n > before {
		t.Fatalf("%d goroutines with %d more TCP allocations, %d before", n, len(routes), before)
	}
	for _, r := range routes {
		rl.Routes().Close(r, bindings.Both)
	}
	if n := runtime.NumGoroutine(); n > before {
		t.Fatalf("%d goroutines after closing them, %d before", n, before)
	}
}
