package relay

import (
	"net"
	"testing"
	"time"
)

// TestDownlinkLoopSurvivesAPanic: a panic while the loop handles one
// descriptor is reported, that descriptor leaves the set, and the loop goes
// on relaying to the allocation's client.
func TestDownlinkLoopSurvivesAPanic(t *testing.T) {
	panics := make(chan any, 4)
	g := New(Options{IPv4: net.IPv4(127, 0, 0, 1), MinPort: 20000, MaxPort: 40000, Panicked: func(v any) { panics <- v }})
	t.Cleanup(g.Close)
	ln, err := net.ListenTCP("tcp4", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	sc := newStreamClient(t, g, ln)
	loop, ok := g.Reactor(sc.relayAddr)
	if !ok {
		t.Fatal("no loop for a TCP client's relay")
	}
	released := make(chan struct{}, 1)
	if err := loop.Watch(sc.stream.Fd(), func() bool { panic("injected") }, func() { released <- struct{}{} }); err != nil {
		t.Fatal(err)
	}
	if _, err := sc.conn.Write([]byte("boom")); err != nil {
		t.Fatal(err)
	}
	select {
	case v := <-panics:
		if v != "injected" {
			t.Fatalf("Panicked got %v", v)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the injected panic was not reported")
	}
	select {
	case <-released:
	case <-time.After(10 * time.Second):
		t.Fatal("the descriptor that panicked was not handed back")
	}
	passed(t, &sc, "still relaying")
	select {
	case v := <-panics:
		t.Fatalf("a second panic: %v", v)
	default:
	}
}
