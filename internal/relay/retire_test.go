package relay

import (
	"errors"
	"net"
	"testing"
	"time"

	"github.com/turnd/turnd/internal/stacks"
)

// readAfterClose starts pion's goroutine for a relay socket, as pion runs
// it: ReadFrom until an error. The channel gets that error.
func readAfterClose(pc net.PacketConn) <-chan error {
	out := make(chan error, 1)
	go func() {
		buf := make([]byte, 1600)
		for {
			if _, _, err := pc.ReadFrom(buf); err != nil {
				out <- err
				return
			}
		}
	}()
	return out
}

// TestRetireAfterReport follows an allocation's deletion as pion makes it:
// the relay socket closes, then pion reports the deletion. pion's goroutine
// for the socket must get its error only after the report, with the
// address object pion keyed the allocation by retired (port 0), so the
// lookup pion makes next matches no allocation. Both kinds of relay
// socket: read by a downlink loop (UDP and plain TCP clients) and read by
// pion's goroutine itself (TLS clients).
func TestRetireAfterReport(t *testing.T) {
	for _, tc := range []struct {
		name   string
		loop   bool
		client net.Addr
	}{
		{"loop, udp client", true, &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 40001}},
		{"pion reads, tls client", false, &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 40002}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := New(Options{IPv4: net.IPv4(127, 0, 0, 1), MinPort: 20000, MaxPort: 40000})
			t.Cleanup(g.Close)
			lane := listenLane(t, "udp4", "127.0.0.1")
			if !tc.loop {
				lane = nil
			}
			pc, relayAddr, err := g.AllocateUDP("udp4", 0, lane)
			if err != nil {
				t.Fatal(err)
			}
			// A TLS client's relay has no writer here: the fast path stays off,
			// the key is still recorded.
			if err := g.AttachClient(relayAddr, tc.client, &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 3478}, nil); err != nil {
				t.Fatal(err)
			}
			read := readAfterClose(pc)
			if err := pc.Close(); err != nil {
				t.Fatal(err)
			}
			// pion's goroutine must wait for the report, key intact.
			stacks.Wait(t, "relay.(*Conn).retire", 5*time.Second)
			if port := portOf(tc.client); port == 0 {
				t.Fatal("key retired before pion reported the deletion")
			}
			g.Deleted(relayAddr)
			select {
			case err := <-read:
				if err == nil {
					t.Fatal("ReadFrom returned no error after close")
				}
			case <-time.After(5 * time.Second):
				t.Fatal("pion's goroutine still in ReadFrom after the close and the report")
			}
			if port := portOf(tc.client); port != 0 {
				t.Errorf("client address port %d after the report, want 0 (retired)", port)
			}
			if len(g.retiring) != 0 {
				t.Errorf("%d sockets still wait for a report", len(g.retiring))
			}
		})
	}
}

// TestRetireNotOnShutdown: when pion closes allocations without deleting
// them (its Manager.Close as the server stops), no report comes. Closing
// the relay lets the goroutine go with the key intact, so its own
// lookup deletes the allocation, as it must.
func TestRetireNotOnShutdown(t *testing.T) {
	g := New(Options{IPv4: net.IPv4(127, 0, 0, 1), MinPort: 20000, MaxPort: 40000})
	pc, relayAddr, err := g.AllocateUDP("udp4", 0, listenLane(t, "udp4", "127.0.0.1"))
	if err != nil {
		t.Fatal(err)
	}
	client := &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 40003}
	if err := g.AttachClient(relayAddr, client, &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 3478}, nil); err != nil {
		t.Fatal(err)
	}
	read := readAfterClose(pc)
	if err := pc.Close(); err != nil {
		t.Fatal(err)
	}
	g.Close()
	select {
	case err := <-read:
		if !errors.Is(err, net.ErrClosed) {
			t.Errorf("ReadFrom after close: %v, want net.ErrClosed", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("pion's goroutine still in ReadFrom after the relay closed")
	}
	if client.Port != 40003 {
		t.Errorf("client address port %d, want 40003: nothing reported, nothing to retire", client.Port)
	}
}

func portOf(a net.Addr) int {
	switch a := a.(type) {
	case *net.UDPAddr:
		return a.Port
	case *net.TCPAddr:
		return a.Port
	}
	return -1
}
