package relay

import (
	"net"
	"runtime"
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
	loop := Loop{d: sc.relay.(*Conn).loop} // the relay's own loop, which passed checks
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

// TestDownlinkPanicInFlushRemovesNoDescriptor: a panic while the loop
// flushes its batches is no descriptor's doing: the last one handled stays
// in the set and is not handed back.
func TestDownlinkPanicInFlushRemovesNoDescriptor(t *testing.T) {
	panics := make(chan any, 4)
	g := New(Options{IPv4: net.IPv4(127, 0, 0, 1), MinPort: 20000, MaxPort: 40000, Panicked: func(v any) { panics <- v }})
	t.Cleanup(g.Close)
	ln, err := net.ListenTCP("tcp4", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	sc := newStreamClient(t, g, ln)
	loop := Loop{d: sc.relay.(*Conn).loop} // the relay's own loop, which passed checks
	released := make(chan struct{}, 1)
	again := make(chan struct{}, 1)
	calls := 0
	ready := func() bool { // runs in the loop's round, under its lock
		calls++
		if calls == 1 {
			loop.d.lanes = append(loop.d.lanes, laneBatch{}) // its nil writer panics in flush
			return true
		}
		again <- struct{}{}
		return false // leave the set: the test is done with it
	}
	if err := loop.Watch(sc.stream.Fd(), ready, func() { released <- struct{}{} }); err != nil {
		t.Fatal(err)
	}
	if _, err := sc.conn.Write([]byte("ready")); err != nil {
		t.Fatal(err)
	}
	select {
	case <-panics:
	case <-time.After(10 * time.Second):
		t.Fatal("the panic in flush was not reported")
	}
	select {
	case <-again:
	case <-released:
		t.Fatal("the descriptor handled before the panic in flush was handed back")
	case <-time.After(10 * time.Second):
		t.Fatal("the descriptor was not served again after the panic in flush")
	}
}

// panicWriter is a TCP client's connection whose write panics.
type panicWriter struct{}

func (panicWriter) Write([]byte) (int, error) { panic("injected") }
func (panicWriter) TryWritev([][]byte) bool   { panic("injected") }

// TestDownlinkPanicOnRelaySocketEndsItsAllocation: a relay socket whose
// handling panicked leaves the set and is closed, so its allocation ends
// instead of living on without peer data.
func TestDownlinkPanicOnRelaySocketEndsItsAllocation(t *testing.T) {
	panics := make(chan any, 4)
	g := New(Options{IPv4: net.IPv4(127, 0, 0, 1), MinPort: 20000, MaxPort: 40000, Panicked: func(v any) { panics <- v }})
	t.Cleanup(g.Close)
	ln, err := net.ListenTCP("tcp4", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	sc := newStreamClient(t, g, ln)
	c := sc.relay.(*Conn)
	cp := *c.client.Load()
	cp.Stream = newWriterStream(panicWriter{})
	c.client.Store(&cp)
	if _, err := sc.peer.WriteTo([]byte("boom"), sc.relay.LocalAddr()); err != nil {
		t.Fatal(err)
	}
	select {
	case <-panics:
	case <-time.After(10 * time.Second):
		t.Fatal("the injected panic was not reported")
	}
	// The loop closes the socket after it reported the panic; wait for it
	// to have done so, bounded.
	deadline := time.Now().Add(10 * time.Second)
	for !c.isClosed() {
		if time.Now().After(deadline) {
			t.Fatal("the relay socket that panicked is still open: its allocation lives on")
		}
		runtime.Gosched()
	}
}
