package edge

import (
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/pion/stun/v4"

	"github.com/turnd/turnd/internal/bindings"
	"github.com/turnd/turnd/internal/wire"
)

// heldReactor keeps the ready function it is given, for the test to call.
type heldReactor struct{ ready func() bool }

func (r *heldReactor) Watch(_ int, ready func() bool, _ func()) error { r.ready = ready; return nil }
func (r *heldReactor) Unwatch(int) bool                               { return r.ready != nil }

// discardConn is a connection whose writes vanish (a TLS client's, as its
// flusher sees it).
type discardConn struct{ net.Conn }

func (discardConn) Write(b []byte) (int, error) { return len(b), nil }
func (discardConn) Close() error                { return nil }

// TestOwnStreamPerPacketDoesNotAllocate: what a relay loop does per read
// of a plain TCP client (ChannelData to the fast path, a STUN message to
// the handler) and the downlink's TryWritev, to a plain TCP client and
// into a TLS client's outbox, cost no allocation.
func TestOwnStreamPerPacketDoesNotAllocate(t *testing.T) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	client, err := net.Dial("tcp4", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	server, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	var handled, taken int
	reactor := &heldReactor{}
	e := New(nil)
	e.serveConn(server, &StreamOptions{
		Handler: func([]byte, *bindings.Client) { handled++ },
		FastPath: func(net.Addr) FastPath {
			return func(pkt []byte, _ netip.AddrPort) bool { taken++; return wire.IsChannelData(pkt) }
		},
		Reactor:   func() Reactor { return reactor },
		AfterFunc: func(time.Duration, func()) func() bool { return func() bool { return true } },
	}, nil)
	var c *clientConn
	for cc := range e.own.conns {
		c = cc
	}
	defer c.teardown()
	if reactor.ready == nil || c == nil {
		t.Fatal("the connection was not handed to its reactor at accept")
	}
	m, err := stun.Build(stun.TransactionID, stun.BindingRequest)
	if err != nil {
		t.Fatal(err)
	}
	cd := append([]byte{0x40, 0x00, 0x00, 0xa0}, make([]byte, 160)...)
	frames := [][]byte{cd}
	tls := &clientConn{e: e, conn: discardConn{}, out: newOutbox(), resume: make(chan struct{}, 1)}
	defer tls.teardown()
	for name, f := range map[string]func(){
		"ChannelData to the fast path": func() {
			if _, err := client.Write(cd); err != nil {
				t.Fatal(err)
			}
			reactor.ready()
		},
		"STUN to the handler": func() {
			if _, err := client.Write(m.Raw); err != nil {
				t.Fatal(err)
			}
			reactor.ready()
		},
		"TryWritev to a TCP client": func() { c.TryWritev(frames) },
		"TryWritev to a TLS client": func() { tls.TryWritev(frames) },
	} {
		if a := testing.AllocsPerRun(200, f); a != 0 {
			t.Errorf("%s: %.1f allocations per packet, want 0", name, a)
		}
	}
	if handled == 0 || taken == 0 {
		t.Fatalf("handled %d, taken %d: the paths under test never ran", handled, taken)
	}
}
