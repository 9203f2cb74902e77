package edge_test

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pion/stun/v4"

	"github.com/turnd/turnd/internal/bindings"
	"github.com/turnd/turnd/internal/edge"
	"github.com/turnd/turnd/internal/wire"
)

// writeSeq writes the numbers [from, to) as 4-byte big-endian words, a
// few at a time, so a hand-over meets it mid-stream.
func writeSeq(w io.Writer, from, to uint32) error {
	buf := make([]byte, 0, 4*64)
	for n := from; n < to; {
		buf = buf[:0]
		for ; n < to && len(buf) < cap(buf); n++ {
			buf = binary.BigEndian.AppendUint32(buf, n)
		}
		if _, err := w.Write(buf); err != nil {
			return fmt.Errorf("write up to %d: %w", n, err)
		}
	}
	return nil
}

// readSeq reads the numbers [from, to) and fails on the first one lost,
// duplicated or out of order; mid is closed once a quarter has come.
func readSeq(r io.Reader, from, to uint32, mid chan<- struct{}) error {
	var word [4]byte
	for want := from; want < to; want++ {
		if want == from+(to-from)/4 {
			close(mid)
		}
		if _, err := io.ReadFull(r, word[:]); err != nil {
			return fmt.Errorf("read %d: %w", want, err)
		}
		if got := binary.BigEndian.Uint32(word[:]); got != want {
			return fmt.Errorf("read %d, want %d", got, want)
		}
	}
	return nil
}

// pipeRig is a data connection bound on an edge and piped to peerEnd,
// the other end of peer.
type pipeRig struct {
	e      *edge.Edge
	s      *edge.Sockets
	l      edge.Listen
	client net.Conn
	peer   net.Conn
	closed atomic.Int32
}

func newPipeRig(t *testing.T, m readerMode) (*pipeRig, net.Conn) {
	t.Helper()
	bind := request(t, methodConnectionBind, testUser, aliceKey(), true,
		stun.RawAttribute{Type: stun.AttrConnectionID, Value: []byte{0, 0, 0, 7}})
	success := bindAnswer(t, bind, stun.ClassSuccessResponse)
	peer, peerEnd := net.Pipe()
	t.Cleanup(func() { _ = peer.Close(); _ = peerEnd.Close() })
	_ = peer.SetDeadline(time.Now().Add(2 * ioTimeout))
	r := newRecorder()
	r.serve = func(msg []byte, from *bindings.Client) {
		if wire.Type(msg) == wire.TypeConnectionBindRequest {
			from.Send(success)
			from.Stream.Pipe(peerEnd)
		}
	}
	g := &pipeRig{l: edge.Listen{TCP: []string{"127.0.0.1:0"}}, peer: peer}
	_, pick := m.pick(t)
	g.e, g.s = bindServed(t, g.l, r.handler(), edge.StreamOptions{Handler: r.handler(), Reactor: pick,
		Closed: func(*bindings.Client) { g.closed.Add(1) }})
	g.client = dial(t, g.s.TCPAddrs()[0])
	_ = g.client.SetDeadline(time.Now().Add(2 * ioTimeout))
	if _, err := g.client.Write(bind); err != nil {
		t.Fatal(err)
	}
	readN(t, g.client, len(success), len(success))
	return g, peerEnd
}

// flow streams total numbers each way between client and peer and
// returns what reports their end, after calling during once a quarter
// has come each way.
func (g *pipeRig) flow(t *testing.T, total uint32, during func()) {
	t.Helper()
	errs := make(chan error, 4)
	up, down := make(chan struct{}), make(chan struct{})
	go func() { errs <- writeSeq(g.client, 0, total) }()
	go func() { errs <- readSeq(g.peer, 0, total, up) }()
	go func() { errs <- writeSeq(g.peer, 0, total) }()
	go func() { errs <- readSeq(g.client, 0, total, down) }()
	<-up
	<-down
	during()
	for range 4 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}

// TestPausedPipeFlowsOnAfterResume: Pause parks both directions of a
// pipe (it returns only once they are parked) and Resume lets them copy
// again; numbered streams each way lose, repeat and reorder nothing.
func TestPausedPipeFlowsOnAfterResume(t *testing.T) {
	for _, m := range readerModes {
		t.Run(m.name, func(t *testing.T) {
			g, _ := newPipeRig(t, m)
			g.flow(t, 50000, func() {
				ctx, cancel := context.WithTimeout(context.Background(), ioTimeout)
				defer cancel()
				if err := g.e.Pause(ctx); err != nil {
					t.Fatalf("Pause: %v", err)
				}
				g.e.Resume()
			})
		})
	}
}

// TestHandOverMovesAPipe: an RFC 6062 data connection moves to a new edge
// mid-stream (ExportPipes, AdoptPipes with the peer connection the relay
// would have adopted), both directions parked after the write in hand;
// numbered streams each way cross the hand-over with nothing lost or
// repeated, and the old edge's Closed never fires for it.
func TestHandOverMovesAPipe(t *testing.T) {
	for _, m := range readerModes {
		t.Run(m.name, func(t *testing.T) {
			g, peerEnd := newPipeRig(t, m)
			g.flow(t, 50000, func() {
				ctx, cancel := context.WithTimeout(context.Background(), ioTimeout)
				defer cancel()
				if err := g.e.Pause(ctx); err != nil {
					t.Fatalf("Pause: %v", err)
				}
				ex, err := g.e.Export(g.s, nil)
				if err != nil {
					t.Fatal(err)
				}
				if err := g.e.ExportPipes(g.s, &ex, func(p io.ReadWriteCloser) bool { return p == peerEnd }); err != nil {
					t.Fatal(err)
				}
				if len(ex.Pipes) != 1 || len(ex.Conns) != 0 ||
					ex.Pipes[0].Tuple.Client.String() != g.client.LocalAddr().String() {
					t.Fatalf("exported pipes %+v, conns %+v: want the data connection as a pipe alone", ex.Pipes, ex.Conns)
				}
				b, err := json.Marshal(ex)
				if err != nil {
					t.Fatal(err)
				}
				var desc edge.Export
				if err := json.Unmarshal(b, &desc); err != nil {
					t.Fatal(err)
				}
				s2, err := edge.Adopt(g.l, desc, ex.Files)
				if err != nil {
					t.Fatal(err)
				}
				e2 := edge.New(func(v any) { t.Errorf("panic in a handler: %v", v) })
				_, pick := m.pick(t)
				o := edge.StreamOptions{Handler: func([]byte, *bindings.Client) {}, Reactor: pick}
				adopted, err := e2.AdoptStreams(s2, desc, ex.Files, o)
				if err != nil {
					t.Fatal(err)
				}
				start, err := e2.AdoptPipes(s2, desc, ex.Files, []io.ReadWriteCloser{peerEnd}, o)
				if err != nil {
					t.Fatal(err)
				}
				for _, f := range ex.Files {
					_ = f.Close()
				}
				serveAll(t, e2, s2, o.Handler, o)
				adopted.Start()
				if err := g.e.Release(g.s, ex); err != nil {
					t.Fatal(err)
				}
				start()
			})
			if n := g.closed.Load(); n != 0 {
				t.Fatalf("Closed fired %d times on the old edge for a moved pipe", n)
			}
		})
	}
}
