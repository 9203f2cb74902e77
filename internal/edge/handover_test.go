package edge_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"net/netip"
	"sync/atomic"
	"testing"

	"github.com/pion/stun/v4"

	"github.com/turnd/turnd/internal/bindings"
	"github.com/turnd/turnd/internal/edge"
	"github.com/turnd/turnd/internal/netaddr"
)

// echo makes r's handler answer every message with itself.
func echo(r *recorder) *recorder {
	r.serve = func(msg []byte, from *bindings.Client) { from.Send(append([]byte(nil), msg...)) }
	return r
}

// TestHandOverMovesAConnectionMidFrame: a plain TCP client's connection
// with half a frame read at Pause moves with those bytes, and the new
// edge serves the frame once the rest arrives; a UDP client of the same
// server is answered by the new edge, and the old one reads nothing after
// Release; no Closed callback fires on the old edge.
func TestHandOverMovesAConnectionMidFrame(t *testing.T) {
	for _, m := range readerModes {
		t.Run(m.name, func(t *testing.T) {
			r1, r2 := echo(newRecorder()), echo(newRecorder())
			var closed1 atomic.Int32
			_, pick1 := m.pick(t)
			l := edge.Listen{UDP: []string{"127.0.0.1:0"}, Sockets: 1, TCP: []string{"127.0.0.1:0"}}
			e1, s1 := bindServed(t, l, r1.handler(), edge.StreamOptions{Handler: r1.handler(), Reactor: pick1,
				Closed: func(*bindings.Client) { closed1.Add(1) }})
			udp := udpClient(t)
			to := s1.UDPAddrs()[0]
			sendSeq(t, udp, to, 0, 1)
			readSeqs(t, udp, 1)

			client := dial(t, s1.TCPAddrs()[0])
			f1 := request(t, stun.MethodBinding, testUser, nil, true)
			f2 := request(t, stun.MethodRefresh, testUser, nil, true, lifetime(0))
			half := len(f2) / 2
			if _, err := client.Write(append(append([]byte(nil), f1...), f2[:half]...)); err != nil {
				t.Fatal(err)
			}
			readN(t, client, len(f1), len(f1)) // f1 served: the half frame was read with it
			r1.waitSeen(t, 2)                  // the UDP request and f1

			_, pick2 := m.pick(t)
			_, _, ex := handOver(t, e1, s1, false, l, r2.handler(), edge.StreamOptions{Handler: r2.handler(), Reactor: pick2})
			if len(ex.Conns) != 1 || !bytes.Equal(ex.Conns[0].Unread, f2[:half]) || !ex.Conns[0].Idle ||
				ex.Conns[0].Tuple.Client.String() != client.LocalAddr().String() || ex.Conns[0].Listener != 0 {
				t.Fatalf("exported %+v, want the connection with its half frame, idle, from listener 0", ex.Conns)
			}
			if _, err := client.Write(f2[half:]); err != nil {
				t.Fatal(err)
			}
			if got := readN(t, client, len(f2), len(f2)); !bytes.Equal(got, f2) {
				t.Fatalf("answer %x, want the echo of the completed frame", got)
			}
			sendSeq(t, udp, to, 1, 2)
			readSeqs(t, udp, 1)
			if seen := r2.waitSeen(t, 2); !bytes.Equal(seen[0], f2) && !bytes.Equal(seen[1], f2) {
				t.Fatalf("the new edge saw %x, want the completed frame", seen)
			}
			if seen, _, _, _ := r1.snapshot(); len(seen) != 2 {
				t.Fatalf("the old edge served %d messages, want 2 (nothing after Release)", len(seen))
			}
			if n := closed1.Load(); n != 0 {
				t.Fatalf("Closed fired %d times on the old edge for a moved connection", n)
			}
		})
	}
}

// TestHandOverServesACompleteFrameLeftUnread: a frame read behind the one
// in hand at Pause moves unread and is served by the new edge at Start,
// without the client sending another byte.
func TestHandOverServesACompleteFrameLeftUnread(t *testing.T) {
	for _, m := range readerModes {
		t.Run(m.name, func(t *testing.T) {
			release := make(chan struct{})
			var first atomic.Bool
			r1 := newRecorder()
			r1.serve = func(msg []byte, from *bindings.Client) {
				if first.CompareAndSwap(false, true) {
					<-release
				}
				from.Send(append([]byte(nil), msg...))
			}
			r2 := echo(newRecorder())
			_, pick1 := m.pick(t)
			l := edge.Listen{TCP: []string{"127.0.0.1:0"}}
			e1, s1 := bindServed(t, l, nil, edge.StreamOptions{Handler: r1.handler(), Reactor: pick1})
			client := dial(t, s1.TCPAddrs()[0])
			f1 := request(t, stun.MethodBinding, testUser, nil, true)
			f2 := request(t, stun.MethodRefresh, testUser, nil, true, lifetime(0))
			if _, err := client.Write(append(append([]byte(nil), f1...), f2...)); err != nil {
				t.Fatal(err)
			}
			r1.waitSeen(t, 1)
			base, cancel := context.WithTimeout(context.Background(), ioTimeout)
			defer cancel()
			ctx := newWaitingCtx(base)
			paused := make(chan error, 1)
			go func() { paused <- e1.Pause(ctx) }()
			select {
			case <-ctx.readers:
			case err := <-paused:
				t.Fatalf("Pause returned (%v) while the handler held a frame", err)
			}
			close(release)
			if err := <-paused; err != nil {
				t.Fatalf("Pause: %v", err)
			}
			_, pick2 := m.pick(t)
			_, _, ex := handOver(t, e1, s1, true, l, nil, edge.StreamOptions{Handler: r2.handler(), Reactor: pick2})
			if len(ex.Conns) != 1 || !bytes.Equal(ex.Conns[0].Unread, f2) {
				t.Fatalf("exported %+v, want the connection with the second frame unread", ex.Conns)
			}
			if got := readN(t, client, len(f1)+len(f2), len(f1)+len(f2)); !bytes.Equal(got, append(f1, f2...)) {
				t.Fatalf("answers %x, want both frames' echoes", got)
			}
			if seen := r2.waitSeen(t, 1); len(seen) != 1 || !bytes.Equal(seen[0], f2) {
				t.Fatalf("the new edge served %x, want the second frame once", seen)
			}
			if seen, _, _, _ := r1.snapshot(); len(seen) != 1 {
				t.Fatalf("the old edge served %d frames, want 1", len(seen))
			}
		})
	}
}

// TestHandOverKeepsTLS: a TLS client's connection stays with the old edge
// and keeps working after Release, while a new TLS connection is accepted
// by the new edge and a plain TCP one moves to it.
func TestHandOverKeepsTLS(t *testing.T) {
	server, clientCfg := selfSigned(t)
	r1, r2 := echo(newRecorder()), echo(newRecorder())
	_, pick1 := readerModes[1].pick(t)
	l := edge.Listen{TCP: []string{"127.0.0.1:0"}, TLS: []string{"127.0.0.1:0"}, TLSConfig: server}
	e1, s1 := bindServed(t, l, nil, edge.StreamOptions{Handler: r1.handler(), Reactor: pick1})
	warm(t, s1, clientCfg)
	tc, err := tls.Dial("tcp", s1.TLSAddrs()[0].String(), clientCfg)
	secure := bounded(t, tc, err)
	plain := dial(t, s1.TCPAddrs()[0])
	trip := func(c interface {
		Write([]byte) (int, error)
	}, name string) []byte {
		req := request(t, stun.MethodBinding, testUser, nil, true)
		if _, err := c.Write(req); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return req
	}
	for _, c := range []struct {
		name string
		conn interface {
			Write([]byte) (int, error)
		}
	}{{"tls", secure}, {"plain", plain}} {
		req := trip(c.conn, c.name)
		if c.name == "tls" {
			readN(t, secure, len(req), len(req))
		} else {
			readN(t, plain, len(req), len(req))
		}
	}
	before, _, _, _ := r1.snapshot()
	_, s2, ex := handOver(t, e1, s1, false, l, nil, edge.StreamOptions{Handler: r2.handler()})
	if len(ex.Conns) != 1 || ex.Conns[0].Tuple.Client.String() != plain.LocalAddr().String() {
		t.Fatalf("exported %+v, want the plain connection alone", ex.Conns)
	}
	req := trip(secure, "tls after Release")
	readN(t, secure, len(req), len(req))
	after, _, _, _ := r1.snapshot()
	if len(after) != len(before)+1 || !bytes.Equal(after[len(after)-1], req) {
		t.Fatalf("the old edge served %d more messages, want the TLS client's one", len(after)-len(before))
	}
	req = trip(plain, "plain after Release")
	readN(t, plain, len(req), len(req))
	fresh, err := tls.Dial("tcp", s2.TLSAddrs()[0].String(), clientCfg)
	fresh = bounded(t, fresh, err)
	req2 := trip(fresh, "new tls")
	readN(t, fresh, len(req2), len(req2))
	if seen := r2.waitSeen(t, 2); !bytes.Equal(seen[0], req) || !bytes.Equal(seen[1], req2) {
		t.Fatalf("the new edge saw %x, want the moved plain client's and the new TLS client's", seen)
	}
	if got, _, _, _ := r1.snapshot(); len(got) != len(after) {
		t.Fatalf("the old edge served %d messages after the new TLS connection, want none", len(got)-len(after))
	}
}

// TestHandOverMovesAProxiedConnection: a connection that came through a
// trusted PROXY-protocol proxy moves as the client its header named: the
// new edge serves it with that 5-tuple.
func TestHandOverMovesAProxiedConnection(t *testing.T) {
	r1, r2 := echo(newRecorder()), echo(newRecorder())
	l := edge.Listen{TCP: []string{"127.0.0.1:0"},
		Proxy: &edge.Proxy{Listeners: []string{"127.0.0.1:0"}, Trusted: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}}
	e1, s1 := bindServed(t, l, nil, edge.StreamOptions{Handler: r1.handler()})
	proxy := dial(t, s1.TCPAddrs()[0])
	f1 := request(t, stun.MethodBinding, testUser, nil, true)
	if _, err := proxy.Write(append([]byte("PROXY TCP4 192.0.2.7 127.0.0.1 5555 3478\r\n"), f1...)); err != nil {
		t.Fatal(err)
	}
	readN(t, proxy, len(f1), len(f1))
	_, _, ex := handOver(t, e1, s1, false, l, nil, edge.StreamOptions{Handler: r2.handler()})
	want := netip.MustParseAddrPort("192.0.2.7:5555")
	if len(ex.Conns) != 1 || !ex.Conns[0].Proxied || ex.Conns[0].Tuple.Client != want || !ex.Listeners[0].Proxy {
		t.Fatalf("exported %+v on %+v, want the proxied client %v", ex.Conns, ex.Listeners, want)
	}
	f2 := request(t, stun.MethodRefresh, testUser, nil, true, lifetime(0))
	if _, err := proxy.Write(f2); err != nil {
		t.Fatal(err)
	}
	readN(t, proxy, len(f2), len(f2))
	r2.waitSeen(t, 1)
	r2.mu.Lock()
	defer r2.mu.Unlock()
	if len(r2.froms) != 1 || r2.froms[0].Tuple.Client != want || !r2.froms[0].Tuple.TCP {
		t.Fatalf("the new edge served %+v, want the proxied client's 5-tuple", r2.froms)
	}
}

// TestHandOverKeepsAConnectionMidHeader: a connection still sending its
// PROXY header at the hand-over was never handed to a reader: it stays
// with the old edge, which serves it once the header is whole, after
// Release; the new edge takes the next connection.
func TestHandOverKeepsAConnectionMidHeader(t *testing.T) {
	r1, r2 := echo(newRecorder()), echo(newRecorder())
	l := edge.Listen{TCPTLS: []string{"127.0.0.1:0"},
		Proxy: &edge.Proxy{Listeners: []string{"127.0.0.1:0"}, Trusted: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}}
	server, _ := selfSigned(t)
	l.TLSConfig = server
	e1, s1 := bindServed(t, l, nil, edge.StreamOptions{Handler: r1.handler()})
	header := []byte("PROXY TCP4 192.0.2.8 127.0.0.1 6666 3478\r\n")
	first := dial(t, s1.TCPAddrs()[0]) // proves the port's goroutine and loops run
	f1 := request(t, stun.MethodBinding, testUser, nil, true)
	if _, err := first.Write(append(append([]byte(nil), header...), f1...)); err != nil {
		t.Fatal(err)
	}
	readN(t, first, len(f1), len(f1))
	slow := dial(t, s1.TCPAddrs()[0])
	if _, err := slow.Write(header[:10]); err != nil {
		t.Fatal(err)
	}
	r1.waitSeen(t, 1)
	_, s2, ex := handOver(t, e1, s1, false, l, nil, edge.StreamOptions{Handler: r2.handler()})
	if len(ex.Conns) != 1 || ex.Conns[0].Tuple.Client != netip.MustParseAddrPort("192.0.2.8:6666") {
		t.Fatalf("exported %+v, want the first connection alone", ex.Conns)
	}
	f2 := request(t, stun.MethodRefresh, testUser, nil, true, lifetime(0))
	if _, err := slow.Write(append(append([]byte(nil), header[10:]...), f2...)); err != nil {
		t.Fatal(err)
	}
	readN(t, slow, len(f2), len(f2))
	if seen := r1.waitSeen(t, 2); !bytes.Equal(seen[1], f2) {
		t.Fatalf("the old edge saw %x, want the slow connection's frame", seen)
	}
	next := dial(t, s2.TCPAddrs()[0])
	if _, err := next.Write(append(append([]byte(nil), header[:len(header)-8]...), "5 3478\r\n"...)); err != nil {
		t.Fatal(err)
	}
	if _, err := next.Write(f1); err != nil {
		t.Fatal(err)
	}
	readN(t, next, len(f1), len(f1))
	if seen := r2.waitSeen(t, 1); !bytes.Equal(seen[0], f1) {
		t.Fatalf("the new edge saw %x, want the new connection's frame", seen)
	}
	if seen, _, _, _ := r1.snapshot(); len(seen) != 2 {
		t.Fatalf("the old edge served %d frames, want 2", len(seen))
	}
}

// TestFailedSuccessorChangesNothing: a successor that adopted everything
// and then failed closes its copies; the old edge's Resume serves on as
// if nothing happened: its UDP socket, its listener and its plain TCP
// client's connection (closing a copy sent no FIN), and Export works again.
func TestFailedSuccessorChangesNothing(t *testing.T) {
	r1 := echo(newRecorder())
	_, pick := readerModes[1].pick(t)
	l := edge.Listen{UDP: []string{"127.0.0.1:0"}, Sockets: 1, TCP: []string{"127.0.0.1:0"}}
	e1, s1 := bindServed(t, l, r1.handler(), edge.StreamOptions{Handler: r1.handler(), Reactor: pick})
	warm(t, s1, nil)
	client := dial(t, s1.TCPAddrs()[0])
	f1 := request(t, stun.MethodBinding, testUser, nil, true)
	if _, err := client.Write(f1); err != nil {
		t.Fatal(err)
	}
	readN(t, client, len(f1), len(f1))
	ctx, cancel := context.WithTimeout(context.Background(), ioTimeout)
	defer cancel()
	if err := e1.Pause(ctx); err != nil {
		t.Fatal(err)
	}
	ex, err := e1.Export(s1, nil)
	if err != nil {
		t.Fatal(err)
	}
	s2, err := edge.Adopt(l, ex, ex.Files)
	if err != nil {
		t.Fatal(err)
	}
	e2 := edge.New(nil)
	if _, err := e2.AdoptStreams(s2, ex, ex.Files, edge.StreamOptions{Handler: r1.handler()}); err != nil {
		t.Fatal(err)
	}
	for _, f := range ex.Files {
		_ = f.Close()
	}
	if err := e2.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s2.Close(); err != nil {
		t.Fatal(err)
	}
	e1.Resume()
	if _, err := client.Write(f1); err != nil {
		t.Fatal(err)
	}
	if got := readN(t, client, len(f1), len(f1)); !bytes.Equal(got, f1) {
		t.Fatalf("answer %x after the failed hand-over", got)
	}
	udp := udpClient(t)
	sendSeq(t, udp, s1.UDPAddrs()[0], 0, 1)
	readSeqs(t, udp, 1)
	fresh := dial(t, s1.TCPAddrs()[0])
	if _, err := fresh.Write(f1); err != nil {
		t.Fatal(err)
	}
	readN(t, fresh, len(f1), len(f1))
	if err := e1.Pause(ctx); err != nil {
		t.Fatal(err)
	}
	again, err := e1.Export(s1, nil)
	if err != nil {
		t.Fatalf("Export after a failed hand-over: %v", err)
	}
	for _, f := range again.Files {
		_ = f.Close()
	}
	if len(again.Conns) != 2 {
		t.Fatalf("exported %d connections, want 2", len(again.Conns))
	}
	e1.Resume()
}

// TestHandOverLeavesAConnectionThatStays: a connection whose allocation
// stays with the old process (an RFC 6062 control connection, say) is not
// exported, and the old edge serves it on after Release.
func TestHandOverLeavesAConnectionThatStays(t *testing.T) {
	r1, r2 := echo(newRecorder()), echo(newRecorder())
	l := edge.Listen{UDP: []string{"127.0.0.1:0"}, Sockets: 1, TCP: []string{"127.0.0.1:0"}}
	e1, s1 := bindServed(t, l, r1.handler(), edge.StreamOptions{Handler: r1.handler()})
	client := dial(t, s1.TCPAddrs()[0])
	f1 := request(t, stun.MethodBinding, testUser, nil, true)
	if _, err := client.Write(f1); err != nil {
		t.Fatal(err)
	}
	readN(t, client, len(f1), len(f1))
	r1.waitSeen(t, 1)
	stays := func(tp netaddr.FiveTuple) bool { return tp.Client.String() == client.LocalAddr().String() }
	_, _, ex := handOverKeeping(t, e1, s1, false, l, r2.handler(), edge.StreamOptions{Handler: r2.handler()}, stays)
	if len(ex.Conns) != 0 {
		t.Fatalf("exported %+v, want no connection", ex.Conns)
	}
	f2 := request(t, stun.MethodRefresh, testUser, nil, true, lifetime(0))
	if _, err := client.Write(f2); err != nil {
		t.Fatal(err)
	}
	if got := readN(t, client, len(f2), len(f2)); !bytes.Equal(got, f2) {
		t.Fatalf("answer %x, want the echo of the frame", got)
	}
	if seen, _, _, _ := r1.snapshot(); len(seen) != 2 {
		t.Fatalf("the old edge served %d messages, want 2 (it keeps the connection)", len(seen))
	}
}
