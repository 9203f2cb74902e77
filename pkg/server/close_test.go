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

	"github.com/turnd/turnd/internal/testturn"
	"github.com/turnd/turnd/pkg/server"
	"github.com/turnd/turnd/pkg/turn"
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
	raw := sendBinding(t, "tcp", tcpAddr(t, s))
	reply := make([]byte, 512)
	if _, err := raw.Read(reply); err != nil { // accepted and served
		t.Fatalf("binding over tcp: %v", err)
	}
	waitCount(t, s.Table(), 2)
	wantByTransport(t, s.Table(), 1, 1, 0)

	if err := s.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	select {
	case <-s.Done():
	default:
		t.Error("Done not closed after Close")
	}
	waitCount(t, s.Table(), 0)
	wantByTransport(t, s.Table(), 0, 0, 0)
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
// 200, not EOF over TCP or silence over UDP.
//
// The close starts from the log record of the deletion, which pion's
// handler writes before it answers, and that record is held until Close has
// begun waiting for the answer, so the close always lands in the window.
func TestCloseAnswersRequestsInFlight(t *testing.T) {
	for _, network := range []string{"udp", "tcp"} {
		t.Run(network, func(t *testing.T) {
			var srv atomic.Pointer[server.Server] // set once the server runs
			answering := make(chan struct{})
			var once sync.Once
			opts := testOptions()
			opts.Logger = slog.New(hookLog(func(r slog.Record) {
				switch r.Message {
				case "allocation deleted":
					s := srv.Load()
					go s.Close()
					select { // held until Close waits (or, without that wait, has finished)
					case <-answering:
					case <-s.Done():
					}
				case "closing: answering requests in flight":
					once.Do(func() { close(answering) })
				}
			}))
			s := start(t, opts)
			srv.Store(s)
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

// TestCloseBoundsTheWaitForAnswers: a request the handlers never finish
// (here an Allocate whose relay Open is held; in life, an answer written
// to a client that stopped reading) delays Close by a bounded grace, with
// a warning, instead of forever.
func TestCloseBoundsTheWaitForAnswers(t *testing.T) {
	hold := heldRelays{entered: make(chan struct{}, 1), release: make(chan struct{})}
	var warned atomic.Bool
	opts := testOptions()
	server.WrapRelays(&opts, func(r turn.Relays) turn.Relays { hold.Relays = r; return hold })
	opts.Logger = slog.New(hookLog(func(r slog.Record) {
		if r.Message == "closing with requests unanswered" {
			warned.Store(true)
		}
	}))
	s := start(t, opts)
	var released sync.Once
	t.Cleanup(func() { released.Do(func() { close(hold.release) }) })
	c := dial(t, s, "udp")
	c.Learn()
	// Sent once and never read: the server closes under it.
	if _, err := c.Conn().Write(c.Build(stun.MethodAllocate, testturn.UDPTransport).Raw); err != nil {
		t.Fatal(err)
	}
	select {
	case <-hold.entered:
	case <-time.After(waitTimeout):
		t.Fatal("the Allocate never reached the relay")
	}
	begun := time.Now()
	if err := s.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	took := time.Since(begun)
	released.Do(func() { close(hold.release) })
	if took > 2*time.Second {
		t.Errorf("Close took %v with a request never answered, want about 500 ms", took)
	}
	if !warned.Load() {
		t.Error("no warning that Close left a request unanswered")
	}
}

// hookLog is a log handler that runs its function on every record, on the
// goroutine that logs it: for the records above, pion's handler of a
// request, which the function can hold.
type hookLog func(slog.Record)

func (h hookLog) Enabled(context.Context, slog.Level) bool { return true }
func (h hookLog) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h hookLog) WithGroup(string) slog.Handler            { return h }

func (h hookLog) Handle(_ context.Context, r slog.Record) error {
	h(r)
	return nil
}

// sendBinding dials addr and sends a STUN Binding request, with no
// credentials; the connection closes when the test ends.
func sendBinding(t *testing.T, network, addr string) net.Conn {
	t.Helper()
	conn, err := net.Dial(network, addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	bind, err := stun.Build(stun.TransactionID, stun.BindingRequest)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Write(bind.Raw); err != nil {
		t.Fatal(err)
	}
	return conn
}
