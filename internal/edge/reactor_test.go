package edge_test

import (
	"bytes"
	"errors"
	"io"
	"net"
	"net/netip"
	"slices"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/turnd/turnd/internal/edge"
	"github.com/turnd/turnd/internal/gate"
)

// testReactor is a edge.Reactor in miniature: a goroutine per watched
// descriptor polls it and calls ready, under the lock Unwatch takes, as the
// relay's loop does under its own.
type testReactor struct {
	mu      sync.Mutex
	closed  bool
	watched map[int]*testWatch
	calls   int           // ready calls
	watches chan struct{} // a signal per Watch
}

type testWatch struct {
	ready    func() bool
	released func()
}

func newTestReactor(t *testing.T) *testReactor {
	r := &testReactor{watched: map[int]*testWatch{}, watches: make(chan struct{}, 100)}
	t.Cleanup(r.close)
	return r
}

func (r *testReactor) Watch(fd int, ready func() bool, released func()) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return net.ErrClosed
	}
	w := &testWatch{ready: ready, released: released}
	r.watched[fd] = w
	go r.poll(fd, w)
	r.watches <- struct{}{}
	return nil
}

// poll waits for fd to be readable (waking every 10 ms to see whether it
// is still watched) and calls ready.
func (r *testReactor) poll(fd int, w *testWatch) {
	for {
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		n, _ := unix.Poll(fds, 10)
		r.mu.Lock()
		if r.watched[fd] != w {
			r.mu.Unlock()
			return
		}
		if n > 0 {
			r.calls++
			if !w.ready() {
				delete(r.watched, fd)
				r.mu.Unlock()
				return
			}
		}
		r.mu.Unlock()
	}
}

func (r *testReactor) Unwatch(fd int) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.watched[fd]
	delete(r.watched, fd)
	return ok
}

func (r *testReactor) close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closed = true
	for fd, w := range r.watched {
		delete(r.watched, fd)
		w.released()
	}
}

func (r *testReactor) readyCalls() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.calls
}

func (r *testReactor) waitWatch(t *testing.T) {
	t.Helper()
	select {
	case <-r.watches:
	case <-time.After(ioTimeout):
		t.Fatal("the connection was never handed to the reactor")
	}
}

// reactorPair is streamPair with a fast path, its connection allocated
// with reactor r.
func reactorPair(t *testing.T, r edge.Reactor, fast edge.FastPath) (server, client net.Conn) {
	t.Helper()
	g := gate.New(strictPolicy(), gate.Hooks{})
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	e := edge.New(g, nil)
	server, client = acceptPair(t, e.Listener(ln, time.Second, always(fast)), func() (net.Conn, error) {
		return net.Dial("tcp4", ln.Addr().String())
	})
	e.Allocated(server.RemoteAddr(), server.LocalAddr(), r)
	return server, client
}

// TestStreamReactorCarriesData: once its client holds an allocation, a
// plain TCP connection is read by the reactor, which relays the data frames
// the fast path takes and hands everything else back to pion's Read, in
// order, across frames split anywhere (the reactor reads at most 2 KiB a
// turn, so the 64 KiB frames arrive in many pieces); the end of the stream
// reaches Read as io.EOF.
func TestStreamReactorCarriesData(t *testing.T) {
	var (
		mu    sync.Mutex
		taken [][]byte
	)
	fast := func(frame []byte, _ netip.AddrPort) bool {
		if len(frame) == 4 { // empty ChannelData: left to pion
			return false
		}
		mu.Lock()
		taken = append(taken, append([]byte(nil), frame...))
		mu.Unlock()
		return true
	}
	r := newTestReactor(t)
	server, client := reactorPair(t, r, fast)
	var all, wantPion []byte
	var wantFast [][]byte
	for i := 0; i < 3; i++ {
		for _, f := range passingFrames(t) {
			all = append(all, f...)
			if isDataFrame(f) && len(f) != 4 {
				wantFast = append(wantFast, f)
			} else {
				wantPion = append(wantPion, f...)
			}
		}
	}
	written := make(chan error, 1)
	go func() { // in 700-byte pieces, then the end of the stream
		for b := all; len(b) > 0; b = b[min(700, len(b)):] {
			if _, err := client.Write(b[:min(700, len(b))]); err != nil {
				written <- err
				return
			}
		}
		written <- client.(*net.TCPConn).CloseWrite()
	}()
	if got := readN(t, server, len(wantPion), 1600); !bytes.Equal(got, wantPion) {
		t.Fatalf("pion read %d bytes, differing from the %d expected at byte %d", len(got), len(wantPion), firstDiff(got, wantPion))
	}
	if err := <-written; err != nil {
		t.Fatal(err)
	}
	if n, err := server.Read(make([]byte, 1600)); n != 0 || err != io.EOF {
		t.Fatalf("Read after the client closed = (%d, %v), want (0, EOF)", n, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(taken) != len(wantFast) {
		t.Fatalf("fast path took %d frames, want %d", len(taken), len(wantFast))
	}
	for i := range taken {
		if !bytes.Equal(taken[i], wantFast[i]) {
			t.Fatalf("fast-path frame %d differs at byte %d", i, firstDiff(taken[i], wantFast[i]))
		}
	}
	if r.readyCalls() == 0 {
		t.Fatal("the reactor never read the connection")
	}
}

// isDataFrame: ChannelData or a Send indication.
func isDataFrame(f []byte) bool {
	return f[0]&0xC0 == 0x40 || (f[0] == 0 && f[1] == 0x16)
}

// TestStreamReactorClose: closing a connection the reactor is reading takes
// it out of the reactor first, and wakes pion's waiting Read.
func TestStreamReactorClose(t *testing.T) {
	r := newTestReactor(t)
	server, _ := reactorPair(t, r, func([]byte, netip.AddrPort) bool { return true })
	done := make(chan error, 1)
	go func() {
		_, err := server.Read(make([]byte, 1600))
		done <- err
	}()
	r.waitWatch(t)
	if err := server.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if !errors.Is(err, net.ErrClosed) {
			t.Fatalf("Read after Close: %v, want net.ErrClosed", err)
		}
	case <-time.After(ioTimeout):
		t.Fatal("Read still waits after Close")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.watched) != 0 {
		t.Fatal("the closed connection is still watched")
	}
}

// TestStreamReactorReleased: when the reactor stops, Read goes back to
// reading the connection itself.
func TestStreamReactorReleased(t *testing.T) {
	r := newTestReactor(t)
	server, client := reactorPair(t, r, nil)
	frame := channelData([]byte("after the reactor"), true)
	type result struct {
		got []byte
		err error
	}
	done := make(chan result, 1)
	go func() {
		got := make([]byte, len(frame))
		_, err := io.ReadFull(server, got)
		done <- result{got, err}
	}()
	r.waitWatch(t)
	r.close()
	if _, err := client.Write(frame); err != nil {
		t.Fatal(err)
	}
	select {
	case res := <-done:
		if res.err != nil || !bytes.Equal(res.got, frame) {
			t.Fatalf("Read %x (%v), want %x", res.got, res.err, frame)
		}
	case <-time.After(ioTimeout):
		t.Fatal("Read never read the connection itself")
	}
}

// FuzzStreamReactor: whatever a client sends, and however it is split, a
// connection read by a reactor gives pion the same bytes, the fast path
// the same frames and Read the same end (io.EOF or bad framing) as one
// read by its own goroutine.
func FuzzStreamReactor(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		f.Add(s, uint16(7))
	}
	f.Add(slices.Concat(passingFrames(f)...), uint16(700))
	f.Add(slices.Concat(channelData([]byte("a"), true), []byte{0xFF, 0xFF, 0, 0}, channelData(nil, true)), uint16(3))
	f.Fuzz(func(t *testing.T, data []byte, chunk uint16) {
		plain := streamOutcome(t, data, int(chunk)%2048+1, nil)
		viaReactor := streamOutcome(t, data, int(chunk)%2048+1, newTestReactor(t))
		if !bytes.Equal(plain.pion, viaReactor.pion) {
			t.Fatalf("pion read %d bytes through the reactor, %d without; first difference at %d",
				len(viaReactor.pion), len(plain.pion), firstDiff(viaReactor.pion, plain.pion))
		}
		if len(plain.fast) != len(viaReactor.fast) {
			t.Fatalf("the fast path took %d frames through the reactor, %d without", len(viaReactor.fast), len(plain.fast))
		}
		for i := range plain.fast {
			if !bytes.Equal(plain.fast[i], viaReactor.fast[i]) {
				t.Fatalf("fast-path frame %d differs through the reactor", i)
			}
		}
		if plain.end != viaReactor.end {
			t.Fatalf("Read ended with %q through the reactor, %q without", viaReactor.end, plain.end)
		}
	})
}

// outcome is what one connection's stream came to.
type outcome struct {
	pion []byte   // what Read returned
	fast [][]byte // what the fast path took
	end  string   // how Read ended: "eof" or "bad framing"
}

// streamOutcome sends data over a loopback TCP connection in chunks of
// chunk bytes, then closes it, and reads it as pion would; with r the
// connection is read by r once "allocated". The fast path takes Send
// indications and ChannelData on even channel numbers.
func streamOutcome(t *testing.T, data []byte, chunk int, r edge.Reactor) outcome {
	var (
		mu  sync.Mutex
		out outcome
	)
	fast := func(frame []byte, _ netip.AddrPort) bool {
		if frame[0]&0xC0 == 0x40 && frame[1]&1 == 1 {
			return false
		}
		mu.Lock()
		out.fast = append(out.fast, append([]byte(nil), frame...))
		mu.Unlock()
		return true
	}
	g := gate.New(&gate.Policy{}, gate.Hooks{Accepting: func() bool { return false }})
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	e := edge.New(g, nil)
	server, client := acceptPair(t, e.Listener(ln, time.Second, always(fast)), func() (net.Conn, error) {
		return net.Dial("tcp4", ln.Addr().String())
	})
	e.Allocated(server.RemoteAddr(), server.LocalAddr(), r)
	go func() {
		defer client.(*net.TCPConn).CloseWrite()
		for b := data; len(b) > 0; b = b[min(chunk, len(b)):] {
			if _, err := client.Write(b[:min(chunk, len(b))]); err != nil {
				return // the framer gave up and the server end closed
			}
		}
	}()
	buf := make([]byte, 1600)
	for {
		n, err := server.Read(buf)
		out.pion = append(out.pion, buf[:n]...)
		switch {
		case err == nil:
			continue
		case errors.Is(err, io.EOF):
			out.end = "eof"
		case errors.Is(err, edge.ErrBadFraming):
			out.end = "bad framing"
		default:
			t.Fatalf("Read: %v", err)
		}
		_ = server.Close()
		mu.Lock()
		defer mu.Unlock()
		return outcome{pion: out.pion, fast: slices.Clone(out.fast), end: out.end}
	}
}

// TestStreamReactorReset: a client that resets its connection while the
// reactor reads it ends pion's Read with the error, not a hang.
func TestStreamReactorReset(t *testing.T) {
	r := newTestReactor(t)
	server, client := reactorPair(t, r, func([]byte, netip.AddrPort) bool { return true })
	done := make(chan error, 1)
	go func() {
		for {
			if _, err := server.Read(make([]byte, 1600)); err != nil {
				done <- err
				return
			}
		}
	}()
	r.waitWatch(t)
	if _, err := client.Write(channelData([]byte("relayed, then reset"), true)); err != nil {
		t.Fatal(err)
	}
	_ = client.(*net.TCPConn).SetLinger(0) // close with RST
	_ = client.Close()
	select {
	case err := <-done:
		if errors.Is(err, io.EOF) || !errors.Is(err, unix.ECONNRESET) {
			t.Fatalf("Read after a reset: %v, want ECONNRESET", err)
		}
	case <-time.After(ioTimeout):
		t.Fatal("Read still waits after the client reset the connection")
	}
}

// always gives every connection the same fast path.
func always(fast edge.FastPath) func(net.Addr) edge.FastPath {
	if fast == nil {
		return nil
	}
	return func(net.Addr) edge.FastPath { return fast }
}
