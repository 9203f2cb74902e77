package edge_test

import (
	"net"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/turnd/turnd/internal/bindings"
	"github.com/turnd/turnd/internal/edge"
	"github.com/turnd/turnd/internal/wire"
)

// recorder is a fake Handler and FastPath for the own plane: it keeps the
// frames both saw in one sequence, and notes whether two calls for one
// client ever overlapped (one reader per connection means never).
type recorder struct {
	mu      sync.Mutex
	seen    [][]byte // every frame either path saw, in order
	handled [][]byte // the handler's alone
	taken   [][]byte // the fast path's alone
	froms   []bindings.Client
	each    map[string][][]byte // seen, per client address
	inside  map[string]int
	overlap bool
	changed chan struct{} // a coalesced signal per frame seen

	// take says which data frames the fast path takes; nil: ChannelData.
	take func(frame []byte) bool
	// check, if not nil, runs as each frame is seen, in the caller's goroutine.
	check func()
	// serve, if not nil, runs inside the handler after recording.
	serve func(msg []byte, from *bindings.Client)
}

func newRecorder() *recorder {
	return &recorder{inside: map[string]int{}, each: map[string][][]byte{}, changed: make(chan struct{}, 1)}
}

func (r *recorder) enter(key string, frame []byte, into *[][]byte) {
	if r.check != nil {
		r.check()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.inside[key]++
	if r.inside[key] > 1 {
		r.overlap = true
	}
	cp := append([]byte(nil), frame...)
	r.seen = append(r.seen, cp)
	r.each[key] = append(r.each[key], cp)
	*into = append(*into, cp)
	select {
	case r.changed <- struct{}{}:
	default:
	}
}

func (r *recorder) exit(key string) {
	r.mu.Lock()
	r.inside[key]--
	r.mu.Unlock()
}

// handler is the recorder as an edge.Handler.
func (r *recorder) handler() edge.Handler {
	return func(msg []byte, from *bindings.Client) {
		key := from.Tuple.Client.String()
		r.enter(key, msg, &r.handled)
		r.mu.Lock()
		r.froms = append(r.froms, *from)
		r.mu.Unlock()
		defer r.exit(key)
		if r.serve != nil {
			r.serve(msg, from)
		}
	}
}

// fastPath is the recorder as an edge.FastPath.
func (r *recorder) fastPath() edge.FastPath {
	return func(frame []byte, client netip.AddrPort) bool {
		if r.take != nil && !r.take(frame) || r.take == nil && !wire.IsChannelData(frame) {
			return false
		}
		key := client.String()
		r.enter(key, frame, &r.taken)
		r.exit(key)
		return true
	}
}

// waitSeen waits until the paths have seen n frames, and returns them.
func (r *recorder) waitSeen(t *testing.T, n int) [][]byte {
	t.Helper()
	deadline := time.After(ioTimeout)
	for {
		r.mu.Lock()
		got := len(r.seen)
		seen := r.seen
		r.mu.Unlock()
		if got >= n {
			return seen
		}
		select {
		case <-r.changed:
		case <-deadline:
			t.Fatalf("saw %d frames, want %d", got, n)
		}
	}
}

func (r *recorder) snapshot() (seen, handled, taken [][]byte, overlap bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.seen, r.handled, r.taken, r.overlap
}

// ownStreams binds l, serves every stream listener with o (the recorder's
// handler unless o has one) and stops and closes at cleanup, checking that
// no loop failed.
func ownStreams(t *testing.T, l edge.Listen, o edge.StreamOptions) (*edge.Edge, *edge.Sockets) {
	t.Helper()
	s, err := edge.Bind(l)
	if err != nil {
		t.Fatal(err)
	}
	e := edge.New(func(v any) { t.Errorf("panic in a handler: %v", v) })
	serveAll(t, e, s, nil, o) // stream listeners only: l names no UDP address
	return e, s
}

// dial connects to a stream listener, bounded by ioTimeout.
func dial(t *testing.T, addr net.Addr) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr.String())
	return bounded(t, c, err)
}

// bounded fails the test on err, else closes c with the test and bounds
// its reads and writes by ioTimeout.
func bounded[C net.Conn](t *testing.T, c C, err error) C {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	if err := c.SetDeadline(time.Now().Add(ioTimeout)); err != nil {
		t.Fatal(err)
	}
	return c
}
