package edge_test

import (
	"context"
	"crypto/tls"
	"encoding/binary"
	"encoding/json"
	"net"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/pion/stun/v4"

	"github.com/turnd/turnd/internal/bindings"
	"github.com/turnd/turnd/internal/edge"
	"github.com/turnd/turnd/internal/netaddr"
)

// serveAll serves every UDP socket of s with h and every stream listener
// with o, and at cleanup stops e, closes s (which must not fail: nothing
// closed twice) and checks that no loop failed (Failed must stay silent
// for sockets Release took away).
func serveAll(t *testing.T, e *edge.Edge, s *edge.Sockets, h edge.Handler, o edge.StreamOptions) {
	t.Helper()
	var served sync.WaitGroup
	for _, sock := range s.UDP {
		served.Go(func() {
			if err := e.ServeUDP(sock, nil, h); err != nil {
				t.Errorf("ServeUDP: %v", err)
			}
		})
	}
	for _, ln := range append(append([]net.Listener(nil), s.TCP...), s.TLS...) {
		served.Go(func() {
			if err := e.ServeStreams(ln, o); err != nil {
				t.Errorf("ServeStreams: %v", err)
			}
		})
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), ioTimeout)
		defer cancel()
		if err := e.Stop(ctx); err != nil {
			t.Errorf("Stop: %v", err)
		}
		if err := s.Close(); err != nil {
			t.Errorf("close sockets: %v", err)
		}
		served.Wait()
		select {
		case err := <-e.Failed():
			t.Errorf("a loop failed: %v", err)
		default:
		}
	})
}

// bindServed binds l and serves it on a new edge (see serveAll).
func bindServed(t *testing.T, l edge.Listen, h edge.Handler, o edge.StreamOptions) (*edge.Edge, *edge.Sockets) {
	t.Helper()
	s, err := edge.Bind(l)
	if err != nil {
		t.Fatal(err)
	}
	e := edge.New(func(v any) { t.Errorf("panic in a handler: %v", v) })
	serveAll(t, e, s, h, o)
	return e, s
}

// handOver moves old's sockets and connections to a new edge, as two
// processes would: Pause (unless paused already), Export, the descriptions
// through JSON, Adopt with l, AdoptStreams with o, the files closed, the
// new edge serving, Start, Release. It returns the new edge, its sockets
// and the Export's descriptions.
func handOver(t *testing.T, old *edge.Edge, s *edge.Sockets, paused bool, l edge.Listen, h edge.Handler, o edge.StreamOptions) (*edge.Edge, *edge.Sockets, edge.Export) {
	t.Helper()
	return handOverKeeping(t, old, s, paused, l, h, o, nil)
}

// handOverKeeping is handOver with the connections stays names left with
// the old edge.
func handOverKeeping(t *testing.T, old *edge.Edge, s *edge.Sockets, paused bool, l edge.Listen, h edge.Handler, o edge.StreamOptions,
	stays func(netaddr.FiveTuple) bool) (*edge.Edge, *edge.Sockets, edge.Export) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), ioTimeout)
	defer cancel()
	if !paused {
		if err := old.Pause(ctx); err != nil {
			t.Fatalf("Pause: %v", err)
		}
	}
	ex, err := old.Export(s, stays)
	if err != nil {
		t.Fatalf("Export: %v", err)
	}
	b, err := json.Marshal(ex)
	if err != nil {
		t.Fatalf("encode the export: %v", err)
	}
	var desc edge.Export
	if err := json.Unmarshal(b, &desc); err != nil {
		t.Fatalf("decode the export: %v", err)
	}
	s2, err := edge.Adopt(l, desc, ex.Files)
	if err != nil {
		t.Fatalf("Adopt: %v", err)
	}
	e2 := edge.New(func(v any) { t.Errorf("panic in a handler: %v", v) })
	adopted, err := e2.AdoptStreams(s2, desc, ex.Files, o)
	if err != nil {
		t.Fatalf("AdoptStreams: %v", err)
	}
	for _, f := range ex.Files {
		_ = f.Close()
	}
	serveAll(t, e2, s2, h, o)
	adopted.Start()
	if err := old.Release(s, ex); err != nil {
		t.Fatalf("Release: %v", err)
	}
	return e2, s2, desc
}

// counter is a Handler that counts every message by its sequence number
// (the transaction ID's first 4 bytes) and echoes it.
type counter struct {
	mu    sync.Mutex
	seen  map[uint32]int
	total atomic.Int64
	gate  chan struct{} // if not nil, the first message waits for it to close
	in    chan struct{} // closed when the first message is in hand
	first sync.Once
}

func newCounter() *counter { return &counter{seen: map[uint32]int{}, in: make(chan struct{})} }

func (c *counter) handler(msg []byte, from *bindings.Client) {
	c.first.Do(func() {
		close(c.in)
		if c.gate != nil {
			<-c.gate
		}
	})
	c.mu.Lock()
	c.seen[binary.BigEndian.Uint32(msg[8:12])]++
	c.mu.Unlock()
	c.total.Add(1)
	from.Send(append([]byte(nil), msg...))
}

// handledOnce reports the sequence numbers in [0, n) not handled exactly once.
func (c *counter) handledOnce(n int) (wrong []uint32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := range uint32(n) {
		if c.seen[i] != 1 {
			wrong = append(wrong, i)
		}
	}
	return wrong
}

// seqRequest is a Binding request carrying seq.
func seqRequest(t *testing.T, seq uint32) []byte {
	t.Helper()
	var id [stun.TransactionIDSize]byte
	binary.BigEndian.PutUint32(id[:], seq)
	m, err := stun.Build(stun.NewTransactionIDSetter(id), stun.BindingRequest, stun.Fingerprint)
	if err != nil {
		t.Fatal(err)
	}
	return m.Raw
}

// sendSeq sends the requests [from, to) to addr.
func sendSeq(t *testing.T, c *net.UDPConn, addr net.Addr, from, to int) {
	t.Helper()
	for i := from; i < to; i++ {
		if _, err := c.WriteTo(seqRequest(t, uint32(i)), addr); err != nil {
			t.Fatal(err)
		}
	}
}

// readSeqs reads n answers and returns their sequence numbers.
func readSeqs(t *testing.T, c *net.UDPConn, n int) []uint32 {
	t.Helper()
	out := make([]uint32, 0, n)
	buf := make([]byte, 1500)
	for range n {
		k, _, err := c.ReadFrom(buf)
		if err != nil {
			t.Fatalf("answer %d of %d: %v", len(out)+1, n, err)
		}
		if k < 20 {
			t.Fatalf("answer of %d bytes", k)
		}
		out = append(out, binary.BigEndian.Uint32(buf[8:12]))
	}
	return out
}

// warm makes one round trip through every UDP address and listener of s
// (whose handlers echo), so that every lane and accept loop runs before a
// hand-over, as a serving process's do. tlsClient dials its TLS listeners.
func warm(t *testing.T, s *edge.Sockets, tlsClient *tls.Config) {
	t.Helper()
	client := udpClient(t)
	for _, a := range s.UDPAddrs() {
		sendSeq(t, client, a, 1<<30, 1<<30+1)
		readSeqs(t, client, 1)
	}
	trip := func(c net.Conn) {
		req := seqRequest(t, 1<<30)
		if _, err := c.Write(req); err != nil {
			t.Fatal(err)
		}
		readN(t, c, len(req), len(req))
		_ = c.Close()
	}
	for _, a := range s.TCPAddrs() {
		trip(dial(t, a))
	}
	for _, a := range s.TLSAddrs() {
		c, err := tls.Dial("tcp", a.String(), tlsClient)
		trip(bounded(t, c, err))
	}
}
