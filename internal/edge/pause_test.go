package edge_test

import (
	"context"
	"errors"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/turnd/turnd/internal/edge"
	"github.com/turnd/turnd/internal/mmsg"
)

// TestPauseResumeLosesNoDatagram: a counted UDP stream across Pause and
// Resume, twenty times: every datagram is handled, and answered, exactly
// once; what arrives while paused waits in the kernel and nothing reads it
// until Resume.
func TestPauseResumeLosesNoDatagram(t *testing.T) {
	c := newCounter()
	e, s := bindServed(t, edge.Listen{UDP: []string{"127.0.0.1:0"}, Sockets: 2}, c.handler, edge.StreamOptions{})
	client := udpClient(t)
	to := s.UDPAddrs()[0]
	const rounds, per = 20, 50
	var answered []uint32
	for r := range rounds {
		base := r * per
		sendSeq(t, client, to, base, base+per/2)
		ctx, cancel := context.WithTimeout(context.Background(), ioTimeout)
		if err := e.Pause(ctx); err != nil {
			t.Fatalf("round %d: Pause: %v", r, err)
		}
		cancel()
		atPause := c.total.Load()
		sendSeq(t, client, to, base+per/2, base+per)
		if n := c.total.Load(); n != atPause {
			t.Fatalf("round %d: %d datagrams handled while paused", r, n-atPause)
		}
		e.Resume()
		answered = append(answered, readSeqs(t, client, per)...)
	}
	if wrong := c.handledOnce(rounds * per); len(wrong) > 0 {
		t.Fatalf("%d sequence numbers not handled exactly once, first %d", len(wrong), wrong[0])
	}
	slices.Sort(answered)
	for i, seq := range answered {
		if seq != uint32(i) {
			t.Fatalf("answers: %d at %d, want every sequence number once", seq, i)
		}
	}
}

// TestPauseServesTheBatchInHand: datagrams a recvmmsg brought in together
// are all served before the lane parks (Stop drops them; Pause must not).
func TestPauseServesTheBatchInHand(t *testing.T) {
	sock, err := mmsg.ListenUDP("udp4", "127.0.0.1:0", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer sock.Close()
	client := udpClient(t)
	const batch = 10
	sendSeq(t, client, sock.LocalAddr(), 0, batch) // queued before the lane's first read: one batch
	c := newCounter()
	c.gate = make(chan struct{})
	e := edge.New(nil)
	served := make(chan error, 1)
	go func() { served <- e.ServeUDP(sock, nil, c.handler) }()
	<-c.in
	base, cancel := context.WithTimeout(context.Background(), ioTimeout)
	defer cancel()
	ctx := newWaitingCtx(base)
	paused := make(chan error, 1)
	go func() { paused <- e.Pause(ctx) }()
	select {
	case <-ctx.readers:
	case err := <-paused:
		t.Fatalf("Pause returned (%v) while the handler held a datagram", err)
	}
	close(c.gate)
	if err := <-paused; err != nil {
		t.Fatalf("Pause: %v", err)
	}
	if n := c.total.Load(); n != batch {
		t.Fatalf("%d datagrams of the batch in hand served at Pause, want %d", n, batch)
	}
	sendSeq(t, client, sock.LocalAddr(), batch, batch+1)
	e.Resume()
	readSeqs(t, client, batch+1)
	if wrong := c.handledOnce(batch + 1); len(wrong) > 0 {
		t.Fatalf("sequence numbers %v not handled exactly once", wrong)
	}
	if err := e.Stop(base); err != nil {
		t.Fatal(err)
	}
	if err := <-served; err != nil {
		t.Fatalf("ServeUDP: %v", err)
	}
}

// TestPauseEndsWithItsContext: a Pause whose ctx ends while a handler
// holds a message returns ctx's error, a second Pause is refused, and
// Resume restores service over UDP and TCP; Pause after Stop is refused.
func TestPauseEndsWithItsContext(t *testing.T) {
	c := newCounter()
	c.gate = make(chan struct{})
	_, pick := readerModes[1].pick(t)
	e, s := bindServed(t, edge.Listen{UDP: []string{"127.0.0.1:0"}, TCP: []string{"127.0.0.1:0"}}, c.handler,
		edge.StreamOptions{Handler: c.handler, Reactor: pick})
	client := udpClient(t)
	sendSeq(t, client, s.UDPAddrs()[0], 0, 1)
	<-c.in
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := e.Pause(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Pause with the handler held = %v, want its ctx's error", err)
	}
	if err := e.Pause(context.Background()); !errors.Is(err, edge.ErrPaused) {
		t.Fatalf("second Pause = %v, want ErrPaused", err)
	}
	e.Resume()
	close(c.gate)
	sendSeq(t, client, s.UDPAddrs()[0], 1, 3)
	if got := readSeqs(t, client, 3); len(got) != 3 {
		t.Fatalf("answers %v", got)
	}
	tcp := dial(t, s.TCPAddrs()[0])
	req := seqRequest(t, 3)
	if _, err := tcp.Write(req); err != nil {
		t.Fatal(err)
	}
	readN(t, tcp, len(req), len(req))
	stop, cancelStop := context.WithTimeout(context.Background(), ioTimeout)
	defer cancelStop()
	if err := e.Stop(stop); err != nil {
		t.Fatal(err)
	}
	if err := e.Pause(stop); !errors.Is(err, edge.ErrStopping) {
		t.Fatalf("Pause after Stop = %v, want ErrStopping", err)
	}
}

// TestAdoptBindsWhatNothingPassed: Adopt binds an address the new Listen
// names and nothing passed, adopts the passed lock (a third turnd is still
// refused), and keeps no socket of an address the new Listen no longer
// names: after Release that port is free.
func TestAdoptBindsWhatNothingPassed(t *testing.T) {
	c1, c2 := newCounter(), newCounter()
	old := edge.Listen{UDP: []string{"127.0.0.1:0"}, Sockets: 1, TCP: []string{"127.0.0.1:0", "127.0.0.1:0"}}
	e1, s1 := bindServed(t, old, c1.handler, edge.StreamOptions{Handler: c1.handler})
	warm(t, s1, nil)
	before := c1.total.Load()
	udp, tcp := s1.UDPAddrs()[0], s1.TCPAddrs()
	next := edge.Listen{UDP: []string{"127.0.0.1:0", "127.0.0.1:0"}, Sockets: 1, TCP: []string{"127.0.0.1:0"}}
	_, s2, _ := handOver(t, e1, s1, false, next, c2.handler, edge.StreamOptions{Handler: c2.handler})
	got := s2.UDPAddrs()
	if len(got) != 2 || got[0].String() != udp.String() || got[1].String() == udp.String() {
		t.Fatalf("UDP on %v, want the passed %v and a fresh one", got, udp)
	}
	if a := s2.TCPAddrs(); len(a) != 1 || a[0].String() != tcp[0].String() {
		t.Fatalf("TCP on %v, want the passed %v alone", a, tcp[0])
	}
	ln, err := net.Listen("tcp", tcp[1].String())
	if err != nil {
		t.Fatalf("the listener no longer named is still open: %v", err)
	}
	_ = ln.Close()
	if s, err := edge.Bind(edge.Listen{UDP: []string{udp.String()}}); !errors.Is(err, edge.ErrAddressServed) {
		if s != nil {
			_ = s.Close()
		}
		t.Fatalf("Bind on the adopted %v = %v, want ErrAddressServed", udp, err)
	}
	client := udpClient(t)
	sendSeq(t, client, got[1], 0, 1)
	sendSeq(t, client, got[0], 1, 2)
	readSeqs(t, client, 2)
	if n := c2.total.Load(); n != 2 {
		t.Fatalf("the new edge handled %d datagrams, want 2", n)
	}
	if n := c1.total.Load() - before; n != 0 {
		t.Fatalf("the old edge handled %d datagrams after Release, want 0", n)
	}
}
