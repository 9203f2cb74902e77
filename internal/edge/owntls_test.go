package edge_test

import (
	"bytes"
	"crypto/tls"
	"errors"
	"net"
	"net/netip"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/pion/stun/v4"

	"github.com/turnd/turnd/internal/bindings"
	"github.com/turnd/turnd/internal/edge"
	"github.com/turnd/turnd/internal/wire"
)

// TestOwnTLSStream: over TLS, on a TLS port and on the TLS side of a
// shared TCP/TLS port, the connection's reader frames and serves as over
// TCP; the handler's client says TLS (and a plain client of the shared
// port says not); answers and downlink frames (the TLS outbox) reach the
// client in order.
func TestOwnTLSStream(t *testing.T) {
	serverCfg, clientCfg := selfSigned(t)
	down := channelData([]byte("downlink over tls"), true)
	r := newRecorder()
	r.serve = func(msg []byte, from *bindings.Client) {
		from.Send(msg[:20])
		if wire.Type(msg) == stun.BindingRequest.Value() && !from.Stream.TryWritev([][]byte{down}) {
			t.Error("TryWritev refused a frame with the outbox empty")
		}
	}
	_, s := ownStreams(t, edge.Listen{TLS: []string{"127.0.0.1:0"}, TCPTLS: []string{"127.0.0.1:0"}, TLSConfig: serverCfg},
		edge.StreamOptions{Handler: r.handler(), FastPath: func(net.Addr) edge.FastPath { return r.fastPath() }})
	cd := channelData([]byte("over tls"), true)
	alloc, binding := aliceAllocate(t), request(t, stun.MethodBinding, testUser, nil, true)
	shared := s.TCPAddrs()[0]
	for _, tc := range []struct {
		name   string
		addr   net.Addr
		secure bool
	}{
		{"tls port", s.TLSAddrs()[0], true},
		{"shared port, tls", shared, true},
		{"shared port, plain", shared, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var client net.Conn = dial(t, tc.addr)
			if tc.secure {
				client = tls.Client(client, clientCfg)
			}
			before := len(r.waitSeen(t, 0))
			writeChunks(t, client, slices.Concat(cd, alloc, binding, cd), 5)
			seen := r.waitSeen(t, before+4)[before:]
			if !slices.EqualFunc(seen, [][]byte{cd, alloc, binding, cd}, bytes.Equal) {
				t.Errorf("served %x, want the four frames in order", seen)
			}
			want := slices.Concat(alloc[:20], binding[:20], down)
			if got := readN(t, client, len(want), 1600); !bytes.Equal(got, want) {
				t.Errorf("client got %x, want the two answers, then the downlink frame", got)
			}
			r.mu.Lock()
			from := r.froms[len(r.froms)-1]
			r.mu.Unlock()
			if from.TLS != tc.secure || !from.Tuple.TCP || from.Stream == nil || from.Lane != nil ||
				from.Tuple.Client.String() != client.LocalAddr().String() {
				t.Errorf("handler's client %+v, want TLS %v, TCP, a stream, %v", from, tc.secure, client.LocalAddr())
			}
		})
	}
}

// TestOwnTLSHandshakeTimeout: a TLS client that connects and never
// completes its handshake is cut after the handshake timeout.
func TestOwnTLSHandshakeTimeout(t *testing.T) {
	serverCfg, _ := selfSigned(t)
	_, s := ownStreams(t, edge.Listen{TLS: []string{"127.0.0.1:0"}, TLSConfig: serverCfg},
		edge.StreamOptions{Handler: newRecorder().handler(), HandshakeTimeout: 200 * time.Millisecond})
	for _, sends := range [][]byte{nil, {0x16, 0x03, 0x01, 0x02, 0x00, 0x01}} {
		client := dial(t, s.TLSAddrs()[0])
		if _, err := client.Write(sends); err != nil {
			t.Fatal(err)
		}
		_, err := client.Read(make([]byte, 16))
		if err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
			t.Errorf("sent %x: client Read error %v, want the connection cut", sends, err)
		}
	}
}

// TestOwnStreamBehindAProxy: the sockets' PROXY protocol step applies
// before the reader: the handler's client is the one the trusted proxy's
// header names, and its answers go back through the proxy's connection.
func TestOwnStreamBehindAProxy(t *testing.T) {
	const addr = "127.0.0.1:0"
	r := newRecorder()
	r.serve = func(msg []byte, from *bindings.Client) { from.Send(msg[:20]) }
	for _, m := range readerModes {
		t.Run(m.name, func(t *testing.T) {
			_, pick := m.pick(t)
			_, s := ownStreams(t, edge.Listen{TCP: []string{addr},
				Proxy: &edge.Proxy{Listeners: []string{addr}, Trusted: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}},
				edge.StreamOptions{Handler: r.handler(), Reactor: pick})
			proxy := dial(t, s.TCPAddrs()[0])
			binding := request(t, stun.MethodBinding, testUser, nil, true)
			if _, err := proxy.Write(append([]byte("PROXY TCP4 192.0.2.7 127.0.0.1 5555 3478\r\n"), binding...)); err != nil {
				t.Fatal(err)
			}
			if got := readN(t, proxy, 20, 20); !bytes.Equal(got, binding[:20]) {
				t.Fatalf("answer %x, want %x", got, binding[:20])
			}
			r.mu.Lock()
			from := r.froms[len(r.froms)-1]
			r.mu.Unlock()
			if want := netip.MustParseAddrPort("192.0.2.7:5555"); from.Tuple.Client != want {
				t.Errorf("handler's client %v, want the proxied %v", from.Tuple.Client, want)
			}
		})
	}
}
