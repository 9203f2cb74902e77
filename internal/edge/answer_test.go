package edge_test

import (
	"bytes"
	"errors"
	"net"
	"sync"
	"syscall"
	"testing"

	"github.com/pion/stun/v4"
	"golang.org/x/sys/unix"

	"github.com/turnd/turnd/internal/bindings"
	"github.com/turnd/turnd/internal/edge"
)

// dialSlow connects with a small receive buffer, so that a client that
// does not read fills its window after a few KiB.
func dialSlow(t *testing.T, addr net.Addr) net.Conn {
	t.Helper()
	d := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		err := c.Control(func(fd uintptr) { serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUF, 4096) })
		if err != nil {
			return err
		}
		return serr
	}}
	c, err := d.Dial("tcp", addr.String())
	return bounded(t, c, err)
}

// TestAnswerNeverStallsTheLoop: a handler runs on the relay loop that
// reads a plain TCP client, so an answer to a client that does not read
// must not wait. Writes to such a client return at once (queued, and past
// the outbox dropped and counted); its downlink frames are refused; the
// loop goes on serving another client; and once the slow client reads,
// it gets its queued answers in order and is read again. (Whether a
// downlink frame is taken just then depends on the kernel's send queue:
// TryWritev promises now or never, not which.)
func TestAnswerNeverStallsTheLoop(t *testing.T) {
	const answerSize, maxAnswers = 16 << 10, 2000
	answer := bytes.Repeat([]byte{0xA5}, answerSize)
	var (
		mu      sync.Mutex
		written int // answers the slow client's handler call had taken
		busy    error
		refused bool
	)
	r := newRecorder()
	r.serve = func(msg []byte, from *bindings.Client) {
		if bytes.Contains(msg, []byte("slow")) {
			// Writes until the outbox is full: each must return at once.
			n := 0
			var err error
			for ; n < maxAnswers; n++ {
				if _, err = from.Stream.Write(answer); err != nil {
					break
				}
			}
			mu.Lock()
			written, busy = n, err
			refused = !from.Stream.TryWritev([][]byte{channelData([]byte("downlink"), true)})
			mu.Unlock()
			return
		}
		from.Send(msg)
	}
	reactor, pick := readerMode{"reactor", true}.pick(t)
	e, s := ownStreams(t, edge.Listen{TCP: []string{"127.0.0.1:0"}}, edge.StreamOptions{Handler: r.handler(), Reactor: pick})
	slow := dialSlow(t, s.TCPAddrs()[0])
	reactor.waitWatch(t)
	other := dial(t, s.TCPAddrs()[0])
	reactor.waitWatch(t)

	if _, err := slow.Write(request(t, stun.MethodBinding, testUser, nil, false, stun.NewSoftware("slow"))); err != nil {
		t.Fatal(err)
	}
	r.waitSeen(t, 1)
	ping := request(t, stun.MethodBinding, testUser, nil, true)
	if _, err := other.Write(ping); err != nil {
		t.Fatal(err)
	}
	if got := readN(t, other, len(ping), 1600); !bytes.Equal(got, ping) {
		t.Fatalf("the other client got %x, want its echo", got)
	}
	// The loop served the other client after the slow one's call: that
	// call had taken the slow connection out of the loop's set.
	reactor.mu.Lock()
	watched := len(reactor.watched)
	reactor.mu.Unlock()
	if watched != 1 {
		t.Errorf("%d connections in the loop, want 1: a client that does not read its answers is not read", watched)
	}
	mu.Lock()
	if !errors.Is(busy, edge.ErrStreamBusy) || written == 0 || written == maxAnswers {
		t.Errorf("after %d answers Write said %v, want ErrStreamBusy once the outbox is full", written, busy)
	}
	if !refused {
		t.Error("TryWritev took a downlink frame for a busy client")
	}
	mu.Unlock()
	if e.DroppedAnswers() != 1 {
		t.Errorf("DroppedAnswers = %d, want 1", e.DroppedAnswers())
	}

	// The slow client reads at last: every answer taken, whole and in
	// order, then the connection is read again.
	got := readN(t, slow, written*answerSize, 64<<10)
	if !bytes.Equal(got, bytes.Repeat(answer, written)) {
		t.Fatalf("slow client's answers differ at byte %d", firstDiff(got, bytes.Repeat(answer, written)))
	}
	reactor.waitWatch(t) // back in the loop once its answers are out
	if _, err := slow.Write(ping); err != nil {
		t.Fatal(err)
	}
	if got := readN(t, slow, len(ping), 1600); !bytes.Equal(got, ping) {
		t.Fatalf("slow client, read again, got %x, want its echo", got)
	}
}

// TestReactorStopsAndAGoroutineReads: a relay loop that stops while it
// reads a connection hands it back; the connection's own goroutine reads
// it from then on.
func TestReactorStopsAndAGoroutineReads(t *testing.T) {
	r := newRecorder()
	r.serve = func(msg []byte, from *bindings.Client) { from.Send(msg[:20]) }
	reactor, pick := readerMode{"reactor", true}.pick(t)
	_, s := ownStreams(t, edge.Listen{TCP: []string{"127.0.0.1:0"}}, edge.StreamOptions{Handler: r.handler(), Reactor: pick})
	client := dial(t, s.TCPAddrs()[0])
	reactor.waitWatch(t)
	reactor.close()
	binding := request(t, stun.MethodBinding, testUser, nil, true)
	if _, err := client.Write(binding); err != nil {
		t.Fatal(err)
	}
	if got := readN(t, client, 20, 20); !bytes.Equal(got, binding[:20]) {
		t.Fatalf("answer %x, want %x", got, binding[:20])
	}
	if reactor.readyCalls() != 0 {
		t.Error("the stopped reactor read the connection")
	}
}
