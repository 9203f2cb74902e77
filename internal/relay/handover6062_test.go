package relay

import (
	"io"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/turnd/turnd/internal/bindings"
)

// TestTCPRouteMoves: an RFC 6062 route moves to a second relay with its
// listener, a peer waiting under its CONNECTION-ID and a bound pair's peer
// connection: after A's ReleaseTCP, B hands out the waiting peer, the
// bound one carries bytes both ways, and a new peer arrives at B on the
// same relayed address. No peer sees its connection end.
func TestTCPRouteMoves(t *testing.T) {
	a := tcpTestRelay(t, 4, Options{})
	b := tcpTestRelay(t, 4, Options{})
	r, relayed := openTCP(t, a)
	r.SetPermissions([]netip.Addr{netip.MustParseAddr("127.0.0.1")})
	dial := func(id uint32) net.Conn {
		ln, accepted := tcpPeer(t, "127.0.0.1") // a peer each: one 4-tuple from the relayed port
		done := make(chan error, 1)
		if err := a.Routes().Connect(r, ln.Addr().(*net.TCPAddr).AddrPort(), id, func(err error) { done <- err }); err != nil {
			t.Fatal(err)
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		return acceptedConn(t, accepted)
	}
	waiting := dial(7)
	bound := dial(8)
	taken, ok := a.Routes().TakePeer(r, 8)
	if !ok {
		t.Fatal("no peer under id 8")
	}
	exchange(t, taken, bound)

	pause(t, a)
	// A peer that connects while paused waits in the kernel's backlog for
	// whoever accepts next: the successor.
	queued, err := net.DialTimeout("tcp4", relayed.String(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer queued.Close()
	files, err := a.Routes().ExportTCP(r)
	if err != nil {
		t.Fatal(err)
	}
	defer files.Close()
	route, pf, err := a.Routes().ExportPeer(taken)
	if err != nil || route != r {
		t.Fatalf("export the bound peer: %v (route %p, want %p)", err, route, r)
	}
	defer pf.Close()

	rB := &bindings.Route{Client: r.Client}
	rB.SetPermissions([]netip.Addr{netip.MustParseAddr("127.0.0.1")})
	got, err := b.Routes().AdoptTCP(rB, files)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Routes().Close(rB, bindings.Both) })
	if got.Addr[0] != relayed.AddrPort() {
		t.Fatalf("adopted at %v, want %v", got.Addr[0], relayed)
	}
	takenB, err := b.Routes().AdoptPeer(rB, pf)
	if err != nil {
		t.Fatal(err)
	}
	a.Routes().ReleaseTCP(r)
	a.Resume()
	if _, ok := a.Routes().TakePeer(r, 7); ok {
		t.Fatal("the released relay still holds a waiting peer")
	}

	exchange(t, takenB, bound)
	waitingB, ok := b.Routes().TakePeer(rB, 7)
	if !ok {
		t.Fatal("the waiting peer did not move under its id")
	}
	exchange(t, waitingB, waiting)

	newPeer, err := net.DialTimeout("tcp4", relayed.String(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer newPeer.Close()
	for _, peer := range []net.Conn{queued, newPeer} { // in the order they connected
		select {
		case got := <-tcpTestOf(b).arrived:
			if got.r != rB {
				t.Fatal("a new peer arrived for another route")
			}
			pc, ok := b.Routes().TakePeer(rB, got.id)
			if !ok {
				t.Fatal("the new peer is not waiting at B")
			}
			exchange(t, pc, peer)
		case got := <-tcpTestOf(a).arrived:
			t.Fatalf("a new peer arrived at the released relay (id %d)", got.id)
		case <-time.After(5 * time.Second):
			t.Fatal("a new peer did not arrive at B")
		}
	}
	if u := rB.Usage.Usage(); u.ToPeerBytes != 8 || u.FromPeerBytes != 8 {
		t.Fatalf("B's usage %+v, want 8 bytes each way", u)
	}
	var _ io.Closer = takenB
}

// TestResumeTakesBackLentPeers: a bound peer connection ExportPeer lent
// for a hand-over that failed (Resume) is this relay's alone again: a
// later hand-over that does not move it leaves it open at ReleaseTCP.
func TestResumeTakesBackLentPeers(t *testing.T) {
	rl := tcpTestRelay(t, 4, Options{})
	r, _ := openTCP(t, rl)
	ln, accepted := tcpPeer(t, "127.0.0.1")
	taken, err := connect(rl, r, ln.Addr())
	if err != nil {
		t.Fatal(err)
	}
	peer := acceptedConn(t, accepted)
	pause(t, rl)
	_, f, err := rl.Routes().ExportPeer(taken)
	if err != nil {
		t.Fatal(err)
	}
	_ = f.Close()
	rl.Resume() // the successor failed
	pause(t, rl)
	rl.Routes().ReleaseTCP(r) // a later hand-over that keeps this pair (a TLS data connection)
	rl.Resume()
	exchange(t, taken, peer)
}

// TestConnectAnswersAfterResume: a Connect whose dial ends while the relay
// is paused for a hand-over is answered only after Resume: held for
// TakePeer if the route stayed, refused and its peer closed if the route
// was released meanwhile (its control connection is the successor's).
func TestConnectAnswersAfterResume(t *testing.T) {
	rl := tcpTestRelay(t, 4, Options{})
	for _, release := range []bool{false, true} {
		r, _ := openTCP(t, rl)
		ln, accepted := tcpPeer(t, "127.0.0.1")
		pause(t, rl)
		done := make(chan error, 1)
		if err := rl.Routes().Connect(r, ln.Addr().(*net.TCPAddr).AddrPort(), 7, func(err error) { done <- err }); err != nil {
			t.Fatal(err)
		}
		peer := acceptedConn(t, accepted) // the dial has ended
		select {
		case err := <-done:
			t.Fatalf("Connect answered while paused (%v)", err)
		case <-time.After(200 * time.Millisecond):
		}
		if release {
			rl.Routes().ReleaseTCP(r)
		}
		rl.Resume()
		select {
		case err := <-done:
			switch {
			case release && err == nil:
				t.Fatal("a Connect on a released route succeeded")
			case !release && err != nil:
				t.Fatalf("connect: %v", err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("Connect not answered after Resume")
		}
		if release {
			wantClosed(t, peer, "the peer of a Connect whose route was released")
			continue
		}
		taken, ok := rl.Routes().TakePeer(r, 7)
		if !ok {
			t.Fatal("the peer is not waiting under its id")
		}
		exchange(t, taken, peer)
		_ = taken.Close()
		rl.Routes().Close(r, bindings.Both)
	}
}
