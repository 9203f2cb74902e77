package edge_test

import (
	"bytes"
	"context"
	"io"
	"net"
	"sync"
	"testing"

	"github.com/pion/stun/v4"

	"github.com/turnd/turnd/internal/bindings"
	"github.com/turnd/turnd/internal/edge"
)

// waitingCtx tells when Stop waits: its first call of Done waits for the
// readers, later ones for answers still being written.
type waitingCtx struct {
	context.Context
	mu      sync.Mutex
	calls   int
	readers chan struct{} // closed at the first call
	writes  chan struct{} // closed at the second
}

func newWaitingCtx(ctx context.Context) *waitingCtx {
	return &waitingCtx{Context: ctx, readers: make(chan struct{}), writes: make(chan struct{})}
}

func (c *waitingCtx) Done() <-chan struct{} {
	c.mu.Lock()
	c.calls++
	switch c.calls {
	case 1:
		close(c.readers)
	case 2:
		close(c.writes)
	}
	c.mu.Unlock()
	return c.Context.Done()
}

// stopInHand waits until r's handler holds a message (gated on release)
// and calls Stop; once Stop waits for the readers it lets the handler go.
// With whenWriting, Stop must then wait for the answers to be written
// before it returns, and whenWriting lets the client read them. Stop must
// not return while a message is in hand.
func stopInHand(t *testing.T, e *edge.Edge, r *recorder, release chan struct{}, whenWriting func()) {
	t.Helper()
	r.waitSeen(t, 1)
	base, cancel := context.WithTimeout(context.Background(), ioTimeout)
	defer cancel()
	ctx := newWaitingCtx(base)
	stopped := make(chan error, 1)
	go func() { stopped <- e.Stop(ctx) }()
	select {
	case <-ctx.readers:
	case err := <-stopped:
		t.Fatalf("Stop returned (%v) while the handler held a message", err)
	}
	close(release)
	if whenWriting != nil {
		select {
		case <-ctx.writes:
			whenWriting()
		case err := <-stopped:
			t.Fatalf("Stop returned (%v) before the answers were written", err)
		}
	}
	if err := <-stopped; err != nil {
		t.Fatalf("Stop: %v", err)
	}
}

// TestStopLetsTheLastAnswerOut: Stop waits for the message each reader
// holds, and for every answer already taken to be written, so that the
// sockets can be closed the moment it returns and the client still gets
// its last answer whole: over UDP, and over TCP both when the socket takes
// the answer at once and when part of it waits (a client reading slowly).
func TestStopLetsTheLastAnswerOut(t *testing.T) {
	small := []byte("the 200 of the Refresh that ended the drain")
	last := request(t, stun.MethodRefresh, testUser, aliceKey(), true, lifetime(0))
	gated := func(release chan struct{}, answers ...[]byte) *recorder {
		r := newRecorder()
		r.serve = func(msg []byte, from *bindings.Client) {
			<-release
			for _, a := range answers {
				from.Send(a)
			}
		}
		return r
	}

	t.Run("udp", func(t *testing.T) {
		release := make(chan struct{})
		e := edge.New(nil)
		r := gated(release, small)
		sock, served := ownLane(t, e, r)
		client := udpClient(t)
		if _, err := client.WriteToUDPAddrPort(last, sock.LocalAddr().(*net.UDPAddr).AddrPort()); err != nil {
			t.Fatal(err)
		}
		stopInHand(t, e, r, release, nil)
		if err := <-served; err != nil {
			t.Errorf("ServeUDP after Stop = %v", err)
		}
		_ = sock.Close()
		buf := make([]byte, 1600)
		n, _, err := client.ReadFromUDPAddrPort(buf)
		if err != nil || !bytes.Equal(buf[:n], small) {
			t.Fatalf("client got %q (%v), want the last answer", buf[:n], err)
		}
	})

	// More than a socket's buffers hold (tcp_wmem's 4 MiB at most) while
	// its client reads slowly: the first answer's rest waits in mmsg.Raw's
	// writer, the second in the outbox, and Stop must wait for both.
	big, second := bytes.Repeat([]byte{0x5A}, 8<<20), bytes.Repeat([]byte{0xA5}, 60<<10)
	for _, m := range readerModes {
		for _, tc := range []struct {
			name    string
			answers [][]byte
			waits   bool // Stop cannot return before the client reads
		}{
			{"taken at once", [][]byte{small}, false},
			{"partly waiting", [][]byte{big, second}, true},
		} {
			t.Run(m.name+"/"+tc.name, func(t *testing.T) {
				release := make(chan struct{})
				r := gated(release, tc.answers...)
				_, pick := m.pick(t)
				s, err := edge.Bind(edge.Listen{TCP: []string{"127.0.0.1:0"}})
				if err != nil {
					t.Fatal(err)
				}
				defer s.Close()
				e := edge.New(nil)
				go func() { _ = e.ServeStreams(s.TCP[0], edge.StreamOptions{Handler: r.handler(), Reactor: pick}) }()
				client := dialSlow(t, s.TCPAddrs()[0])
				if _, err := client.Write(last); err != nil {
					t.Fatal(err)
				}
				want := bytes.Join(tc.answers, nil)
				got := make(chan []byte, 1)
				read := func() {
					go func() { // not readN: a goroutine other than the test's must not FailNow
						b := make([]byte, len(want))
						n, _ := io.ReadFull(client, b)
						got <- b[:n]
					}()
				}
				if tc.waits {
					stopInHand(t, e, r, release, read) // the client reads once Stop waits for it
				} else {
					stopInHand(t, e, r, release, nil)
					read()
				}
				if err := s.Close(); err != nil {
					t.Fatal(err)
				}
				if b := <-got; !bytes.Equal(b, want) {
					t.Fatalf("client got %d bytes differing at %d, want every answer whole", len(b), firstDiff(b, want))
				}
			})
		}
	}
}
