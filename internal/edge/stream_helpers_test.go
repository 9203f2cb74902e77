package edge_test

import (
	"bytes"
	"crypto/tls"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/pion/stun/v4"
	"golang.org/x/sys/unix"

	"github.com/turnd/turnd/internal/testcert"
)

// ioTimeout bounds every blocking socket call in these tests; it is a
// failure guard, never a synchronisation step.
const ioTimeout = 5 * time.Second

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

// readN reads exactly n bytes from c in Reads of at most size bytes.
func readN(t *testing.T, c net.Conn, n, size int) []byte {
	t.Helper()
	var out []byte
	buf := make([]byte, size)
	for len(out) < n {
		k, err := c.Read(buf[:min(size, n-len(out))])
		out = append(out, buf[:k]...)
		if err != nil {
			t.Fatalf("read after %d of %d bytes: %v", len(out), n, err)
		}
	}
	if len(out) != n {
		t.Fatalf("read %d bytes, want %d", len(out), n)
	}
	return out
}

// writeChunks writes b in pieces of chunk bytes from another goroutine (a
// large write must not wait for the reader under test).
func writeChunks(t *testing.T, c net.Conn, b []byte, chunk int) {
	t.Helper()
	done := make(chan error, 1)
	t.Cleanup(func() {
		if err := <-done; err != nil {
			t.Errorf("write: %v", err)
		}
	})
	go func() {
		for len(b) > 0 {
			k := min(chunk, len(b))
			if _, err := c.Write(b[:k]); err != nil {
				done <- err
				return
			}
			b = b[k:]
		}
		done <- nil
	}()
}

// passingFrames is a stream the gate leaves alone, ending in frames of the
// largest sizes a stream can carry.
func passingFrames(t testing.TB) [][]byte {
	big, err := stun.Build(stun.TransactionID, stun.NewType(stun.MethodSend, stun.ClassIndication),
		xorAddr(stun.AttrXORPeerAddress, net.IPv4(127, 0, 0, 2), 9),
		stun.RawAttribute{Type: stun.AttrData, Value: bytes.Repeat([]byte{0xA5}, 65000)})
	if err != nil {
		t.Fatal(err)
	}
	return [][]byte{
		request(t, stun.MethodBinding, testUser, aliceKey(), true),
		channelData([]byte("12345"), true),
		sendIndication(t, bytes.Repeat([]byte{1}, 3000)),
		channelData(nil, true),
		request(t, stun.MethodAllocate, testUser, nil, false, transport(6), dontFragment()),
		channelData(bytes.Repeat([]byte{0xFF}, 1300), true),
		request(t, stun.MethodRefresh, testUser, aliceKey(), true, lifetime(time.Minute)),
		channelData(bytes.Repeat([]byte{0x7E}, 0xFFFF), true), // 65536 bytes padded
		big.Raw,
		channelData([]byte{0}, true),
	}
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// pipeListener hands out one end of a net.Pipe, once.
type pipeListener struct{ conn net.Conn }

func (l *pipeListener) Accept() (net.Conn, error) {
	c := l.conn
	if c == nil {
		return nil, net.ErrClosed
	}
	l.conn = nil
	return c, nil
}

func (l *pipeListener) Close() error { return nil }

func (l *pipeListener) Addr() net.Addr { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 3478} }

// selfSigned returns a server certificate for 127.0.0.1 and a client
// configuration that trusts it.
func selfSigned(t *testing.T) (server, client *tls.Config) {
	t.Helper()
	c := testcert.New(t, 1)
	return c.ServerConfig(), c.ClientConfig()
}

// bindAnswer is pion's answer to a ConnectionBind (success or error).
func bindAnswer(t *testing.T, bind []byte, class stun.MessageClass) []byte {
	t.Helper()
	setters := []stun.Setter{decode(t, bind), stun.NewType(methodConnectionBind, class)}
	if class == stun.ClassErrorResponse {
		setters = append(setters, stun.CodeBadRequest)
	}
	m, err := stun.Build(append(setters, stun.MessageIntegrity(aliceKey()), stun.Fingerprint)...)
	if err != nil {
		t.Fatal(err)
	}
	return m.Raw
}
