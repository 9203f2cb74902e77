package server_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pion/stun/v4"

	"github.com/turnd/turnd/pkg/server"
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

// TestCloseAnswersRequestsInFlight closes the server the way the drain
// does when a client's Refresh with lifetime 0 ends the last allocation:
// at the moment pion counts the deletion, before pion has written its 200
// (pion deletes first and answers after). The client must still get the
// 200; it used to read EOF over TCP, or nothing over UDP.
//
// The close starts from the log record of the deletion, which pion's
// handler writes before it answers, and that record is held until Close has
// begun waiting for the answer, so the close always lands in the window.
func TestCloseAnswersRequestsInFlight(t *testing.T) {
	for _, network := range []string{"udp", "tcp"} {
		t.Run(network, func(t *testing.T) {
			h := &closeOnDeletion{answering: make(chan struct{})}
			opts := testOptions()
			opts.Logger = slog.New(h)
			s := start(t, opts)
			h.s.Store(s)
			c := dial(t, s, network)
			c.MustAllocate()
			if code := c.Refresh(0); code != 0 {
				t.Fatalf("refresh lifetime 0 as the server closed: error %d, want 200", code)
			}
			select {
			case <-s.Done():
			case <-time.After(waitTimeout):
				t.Fatal("the server did not close")
			}
		})
	}
}

// closeOnDeletion is a log handler that closes the server when an
// allocation is deleted and holds pion's handler, which logged it, until
// Close is waiting for its answer (or, without that wait, has finished).
type closeOnDeletion struct {
	s         atomic.Pointer[server.Server] // set once the server runs
	answering chan struct{}
	once      sync.Once
}

func (h *closeOnDeletion) Enabled(context.Context, slog.Level) bool { return true }
func (h *closeOnDeletion) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *closeOnDeletion) WithGroup(string) slog.Handler            { return h }

func (h *closeOnDeletion) Handle(_ context.Context, r slog.Record) error {
	switch r.Message {
	case "allocation deleted":
		s := h.s.Load()
		go s.Close()
		select {
		case <-h.answering:
		case <-s.Done():
		}
	case "closing: answering requests in flight":
		h.once.Do(func() { close(h.answering) })
	}
	return nil
}
