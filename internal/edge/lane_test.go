package edge_test

import (
	"bytes"
	"context"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pion/stun/v4"

	"github.com/turnd/turnd/internal/bindings"
	"github.com/turnd/turnd/internal/edge"
	"github.com/turnd/turnd/internal/mmsg"
)

// ownLane binds a UDP socket on loopback and serves it with ServeUDP until
// cleanup; served is closed when ServeUDP returns, with its error.
func ownLane(t *testing.T, e *edge.Edge, r *recorder) (sock *mmsg.Socket, served <-chan error) {
	t.Helper()
	sock, err := mmsg.ListenUDP("udp4", "127.0.0.1:0", nil)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- e.ServeUDP(sock, r.fastPath(), r.handler()) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), ioTimeout)
		defer cancel()
		_ = e.Stop(ctx)
		_ = sock.Close()
	})
	return sock, done
}

// udpClient is a loopback UDP socket bounded by ioTimeout.
func udpClient(t *testing.T) *net.UDPConn {
	t.Helper()
	c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	return bounded(t, c, err)
}

// TestLaneHandsSTUNToTheHandler: each datagram goes to the fast path
// first; a STUN message it does not take reaches the handler, inline, with
// the client's 5-tuple and the socket it came in on as its lane, through
// which the answer goes back; ChannelData the fast path does not take and
// noise reach nobody (RFC 8656 §12.4). A panicking handler costs one
// datagram, not the socket's reader.
func TestLaneHandsSTUNToTheHandler(t *testing.T) {
	r := newRecorder()
	r.take = func(frame []byte) bool { return frame[0] == 0x40 && frame[1] == 0x00 } // channel 0x4000 is bound
	r.serve = func(msg []byte, from *bindings.Client) {
		if bytes.Contains(msg, []byte("panic")) {
			panic("planted")
		}
		from.Send(append([]byte("answer:"), msg[:20]...))
	}
	var panics atomic.Int32
	e := edge.New(func(any) { panics.Add(1) })
	sock, served := ownLane(t, e, r)
	client := udpClient(t)
	to := sock.LocalAddr().(*net.UDPAddr).AddrPort()

	bound := channelData([]byte("to the peer"), false)
	unbound := append([]byte{0x40, 0x01}, channelData([]byte("nobody"), false)[2:]...)
	binding := request(t, stun.MethodBinding, testUser, nil, true)
	send := sendIndication(t, []byte("no permission"))
	crash := request(t, stun.MethodBinding, testUser, nil, false, stun.NewSoftware("panic"))
	for _, pkt := range [][]byte{bound, unbound, {0xFF, 0xFF, 0, 0}, crash, send, binding} {
		if _, err := client.WriteToUDPAddrPort(pkt, to); err != nil {
			t.Fatal(err)
		}
	}
	for _, want := range [][]byte{send, binding} {
		buf := make([]byte, 1600)
		n, from, err := client.ReadFromUDPAddrPort(buf)
		if err != nil {
			t.Fatalf("no answer: %v", err)
		}
		if from != to || !bytes.Equal(buf[:n], append([]byte("answer:"), want[:20]...)) {
			t.Errorf("answer %q from %v, want the echo of %x from %v", buf[:n], from, want[:20], to)
		}
	}
	seen, handled, taken, _ := r.snapshot()
	if len(taken) != 1 || !bytes.Equal(taken[0], bound) {
		t.Errorf("fast path took %x, want the bound ChannelData alone", taken)
	}
	if len(handled) != 3 || !bytes.Equal(handled[1], send) || !bytes.Equal(handled[2], binding) {
		t.Errorf("handler got %d messages (%x), want the crash, the Send and the Binding", len(handled), handled)
	}
	if len(seen) != 4 {
		t.Errorf("%d datagrams reached a path, want 4 (no unbound ChannelData, no noise)", len(seen))
	}
	r.mu.Lock()
	me := client.LocalAddr().(*net.UDPAddr).AddrPort()
	for _, f := range r.froms {
		if f.Lane != sock || f.Stream != nil || f.Tuple.Client != me || f.Tuple.Server != to || f.Tuple.TCP {
			t.Errorf("handler's client %+v, want lane %p, client %v, server %v over UDP", f, sock, me, to)
		}
	}
	r.mu.Unlock()
	if n := panics.Load(); n != 1 {
		t.Errorf("%d panics reported, want 1", n)
	}
	ctx, cancel := context.WithTimeout(context.Background(), ioTimeout)
	defer cancel()
	if err := e.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-served; err != nil {
		t.Errorf("ServeUDP after Stop = %v, want nil", err)
	}
}

// TestLaneFailureIsReported: a lane whose socket dies without Stop is a
// deaf address; Failed says so.
func TestLaneFailureIsReported(t *testing.T) {
	e := edge.New(nil)
	sock, served := ownLane(t, e, newRecorder())
	_ = sock.Close()
	err := <-served
	if err == nil {
		t.Fatal("ServeUDP on a closed socket returned nil")
	}
	select {
	case failed := <-e.Failed():
		if failed.Error() != err.Error() {
			t.Errorf("Failed = %v, want %v", failed, err)
		}
	case <-time.After(ioTimeout):
		t.Fatal("Failed never reported the dead lane")
	}
}
