package relay

import (
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

// watchLog records what a Loop does with a watched connection.
type watchLog struct {
	stream   *streamClient
	buf      []byte
	got      chan string // what each ready call read
	released chan struct{}
}

func newWatchLog(sc *streamClient) *watchLog {
	return &watchLog{stream: sc, buf: make([]byte, 256), got: make(chan string, 16), released: make(chan struct{}, 1)}
}

// ready reads what waits and keeps watching until it has read "stop".
func (w *watchLog) ready() bool {
	n, err := w.stream.stream.TryRead(w.buf)
	if err != nil {
		w.got <- "error: " + err.Error()
		return false
	}
	w.got <- string(w.buf[:n])
	return !strings.Contains(string(w.buf[:n]), "stop")
}

func (w *watchLog) release() { w.released <- struct{}{} }

func (w *watchLog) next(t *testing.T) string {
	t.Helper()
	select {
	case s := <-w.got:
		return s
	case <-time.After(10 * time.Second):
		t.Fatal("the loop never called ready")
		return ""
	}
}

// wantUnread writes data on the client's connection and checks, once the
// loop has run a pass since (marker mark), that ready was not called for it.
func (w *watchLog) wantUnread(t *testing.T, data, mark, when string) {
	t.Helper()
	if _, err := w.stream.conn.Write([]byte(data)); err != nil {
		t.Fatal(err)
	}
	passed(t, w.stream, mark)
	select {
	case got := <-w.got:
		t.Fatalf("ready was called %s (read %q)", when, got)
	default:
	}
}

// passed proves the loop has run a pass since now: a datagram sent to the
// relay socket reaches the client. Anything readable before it was seen by
// that pass or an earlier one.
func passed(t *testing.T, sc *streamClient, mark string) {
	t.Helper()
	if _, err := sc.peer.WriteTo([]byte(mark), sc.relay.LocalAddr()); err != nil {
		t.Fatal(err)
	}
	frame := make([]byte, 4+(len(mark)+3)&^3)
	_ = sc.conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.ReadFull(sc.conn, frame); err != nil || string(frame[4:4+len(mark)]) != mark {
		t.Fatalf("marker %q came back as %q (%v)", mark, frame, err)
	}
}

// TestLoopReadsAClientConnection: the downlink loop of a TCP client's
// allocation reads the client's connection when the edge hands it over
// (Watch), stops as soon as ready says so, and lets go on Unwatch.
func TestLoopReadsAClientConnection(t *testing.T) {
	g, ln := newStreamRig(t)
	sc := newStreamClient(t, g, ln)
	loop := Loop{d: sc.relay.(*Conn).loop}
	w := newWatchLog(&sc)
	fd := sc.stream.Fd()
	if err := loop.Watch(fd, w.ready, w.release); err != nil {
		t.Fatal(err)
	}
	if _, err := sc.conn.Write([]byte("one")); err != nil {
		t.Fatal(err)
	}
	if got := w.next(t); got != "one" {
		t.Fatalf("ready read %q, want \"one\"", got)
	}
	if _, err := sc.conn.Write([]byte("stop")); err != nil {
		t.Fatal(err)
	}
	if got := w.next(t); got != "stop" {
		t.Fatalf("ready read %q, want \"stop\"", got)
	}
	// ready said false: the connection is out of the set.
	w.wantUnread(t, "unread", "mark", "after it returned false")
	if loop.Unwatch(fd) {
		t.Fatal("Unwatch found a connection that ready had let go")
	}

	// Watched again, it is read again; Unwatch takes it out for good.
	if err := loop.Watch(fd, w.ready, w.release); err != nil {
		t.Fatal(err)
	}
	if got := w.next(t); got != "unread" {
		t.Fatalf("ready read %q, want the bytes that waited: \"unread\"", got)
	}
	if !loop.Unwatch(fd) {
		t.Fatal("Unwatch did not find a watched connection")
	}
	w.wantUnread(t, "after", "mk2!", "after Unwatch")
}

// TestLoopReleasesOnClose: a loop that stops hands every connection it was
// reading back (released), and refuses to watch more.
func TestLoopReleasesOnClose(t *testing.T) {
	g, ln := newStreamRig(t)
	sc := newStreamClient(t, g, ln)
	loop := Loop{d: sc.relay.(*Conn).loop}
	w := newWatchLog(&sc)
	if err := loop.Watch(sc.stream.Fd(), w.ready, w.release); err != nil {
		t.Fatal(err)
	}
	g.Close()
	select {
	case <-w.released:
	case <-time.After(10 * time.Second):
		t.Fatal("closing the relay did not release the watched connection")
	}
	if loop.Unwatch(sc.stream.Fd()) {
		t.Fatal("a released connection was still in the set")
	}
	if err := loop.Watch(sc.stream.Fd(), w.ready, w.release); err == nil {
		t.Fatal("a closed loop accepted a connection")
	}
}

// TestBehindLoopReadsInBatches: when more sockets are ready than one pass
// takes, a socket waits several passes for its turn; it then gets all that
// waits (up to perSocket), not one datagram, or a busy client's relay
// socket falls behind its uplink until the kernel drops datagrams.
func TestBehindLoopReadsInBatches(t *testing.T) {
	r := newFastPathRig(t)
	c, d := r.relay, r.relay.loop
	d.mu.Lock()                      // the loop waits: the test drives readSocket itself
	const queued = 1 + perSocket + 3 // one pass in step, one behind, and some left over
	for i := 0; i < queued; i++ {
		if _, err := r.peer.WriteTo([]byte("x"), c.LocalAddr()); err != nil {
			t.Fatal(err)
		}
	}
	c.readPass = d.pass - 5 // last read several passes ago
	d.readSocket(c, false)
	if d.used != 1 {
		t.Errorf("in step: read %d datagrams, want 1 (recvfrom)", d.used)
	}
	d.readSocket(c, true)
	if d.used != 1+perSocket {
		t.Errorf("behind: read %d datagrams in all, want %d", d.used, 1+perSocket)
	}
	d.flush()
	d.mu.Unlock() // the loop reads the rest
	buf := make([]byte, 64)
	for i := 0; i < queued; i++ {
		_ = r.client.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := r.client.Read(buf); err != nil {
			t.Fatalf("datagram %d of %d: %v", i, queued, err)
		}
	}
}

// TestNextLoopReadsAConnectionWithoutAnAllocation: a loop can read a TCP
// client's connection from its accept on, before any allocation; once the
// relay has closed, no loop takes one.
func TestNextLoopReadsAConnectionWithoutAnAllocation(t *testing.T) {
	g, ln := newStreamRig(t)
	if _, err := New(Options{IPv4: net.IPv4(127, 0, 0, 1), MinPort: 20000, MaxPort: 20001}).closedLoop(); err == nil {
		t.Fatal("a relay closed before its loops started handed out a loop")
	}
	loop, err := g.NextLoop()
	if err != nil {
		t.Fatal(err)
	}
	client, _, raw := dialRaw(t, ln)
	got := make(chan string, 1)
	ready := func() bool {
		buf := make([]byte, 8)
		n, _ := raw.TryRead(buf)
		got <- string(buf[:n])
		return false
	}
	if err := loop.Watch(raw.Fd(), ready, func() {}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.Write([]byte("hello")); err != nil {
		t.Fatal(err)
	}
	select {
	case s := <-got:
		if s != "hello" {
			t.Fatalf("ready read %q", s)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the loop never read the connection")
	}
}

// closedLoop closes the relay, then asks it for a loop.
func (rl *Relay) closedLoop() (Loop, error) {
	rl.Close()
	return rl.NextLoop()
}
