package server_test

import (
	"errors"
	"io"
	"net"
	"runtime"
	"testing"
	"time"

	"github.com/pion/stun/v4"
)

// TestCloseEndsEveryAllocation closes the server under live UDP and TCP
// allocations with the clients still connected: the registry must empty,
// every server goroutine must end (pion's Close alone left accepted TCP
// connections served), and the server must hang up on stream clients.
func TestCloseEndsEveryAllocation(t *testing.T) {
	peer := echoPeer(t)
	before := runtime.NumGoroutine()
	s := start(t, testOptions())
	u := dial(t, s, "udp")
	u.MustAllocate()
	mustPermit(t, u, peer)
	mustEcho(t, u, peer, "udp")
	c := dial(t, s, "tcp")
	c.MustAllocate()
	mustPermit(t, c, peer)
	mustEcho(t, c, peer, "tcp")
	// A stream client that never authenticated: the server must drop it too.
	raw, err := net.Dial("tcp", tcpAddr(t, s))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { raw.Close() })
	bind, err := stun.Build(stun.TransactionID, stun.BindingRequest)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Write(bind.Raw); err != nil {
		t.Fatal(err)
	}
	reply := make([]byte, 512)
	if _, err := raw.Read(reply); err != nil { // accepted and served
		t.Fatalf("binding over tcp: %v", err)
	}
	waitCount(t, s.Registry(), 2)
	wantByTransport(t, s.Registry(), 1, 1, 0)

	if err := s.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	select {
	case <-s.Done():
	default:
		t.Error("Done not closed after Close")
	}
	waitCount(t, s.Registry(), 0)
	wantByTransport(t, s.Registry(), 0, 0, 0)
	// Clients are still open here: only the server's own goroutines count.
	waitGoroutines(t, before)
	_ = raw.SetReadDeadline(time.Now().Add(waitTimeout))
	if _, err := raw.Read(reply); !errors.Is(err, io.EOF) {
		t.Errorf("read from a stream connection after close: %v, want EOF", err)
	}
}

func TestCloseIsIdempotent(t *testing.T) {
	s := start(t, testOptions())
	for i := range 3 {
		if err := s.Close(); err != nil {
			t.Fatalf("close #%d: %v", i+1, err)
		}
	}
	<-s.Done()
	if _, err := net.Dial("tcp", tcpAddr(t, s)); err == nil {
		t.Error("tcp listener still accepts after close")
	}
}
