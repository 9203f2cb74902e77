package edge_test

import (
	"bytes"
	"io"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/pion/stun/v4"

	"github.com/turnd/turnd/internal/bindings"
	"github.com/turnd/turnd/internal/edge"
	"github.com/turnd/turnd/internal/wire"
)

// TestPipeCarriesUnreadBytes: a ConnectionBind the handler accepts turns
// the connection into a byte pipe to the peer after its answer (RFC 6062
// §5.4). The bytes the reader had read behind the request reach the peer
// first and unframed (they are not STUN: framing them would cut the
// connection), then what the client sends later; the peer's bytes reach
// the client after the ConnectionBind's success; the client hanging up
// closes the peer's side.
func TestPipeCarriesUnreadBytes(t *testing.T) {
	bind := request(t, methodConnectionBind, testUser, aliceKey(), true,
		stun.RawAttribute{Type: stun.AttrConnectionID, Value: []byte{0, 0, 0, 7}})
	success := bindAnswer(t, bind, stun.ClassSuccessResponse)
	behind := []byte{0xFF, 0xFF, 0x00, 0x03, 0x80, 'r', 'a', 'w', 0x00, 0x01, 0x00, 0x50}
	later := []byte("later \x00\xff bytes")
	down := []byte("from the peer")
	for _, m := range readerModes {
		t.Run(m.name, func(t *testing.T) {
			peer, peerEnd := net.Pipe()
			t.Cleanup(func() { _ = peer.Close() })
			_ = peer.SetDeadline(time.Now().Add(ioTimeout))
			r := newRecorder()
			r.serve = func(msg []byte, from *bindings.Client) {
				if wire.Type(msg) == wire.TypeConnectionBindRequest {
					from.Send(success)
					from.Stream.Pipe(peerEnd)
				}
			}
			_, pick := m.pick(t)
			_, s := ownStreams(t, edge.Listen{TCP: []string{"127.0.0.1:0"}}, edge.StreamOptions{Handler: r.handler(), Reactor: pick})
			client := dial(t, s.TCPAddrs()[0])
			if _, err := client.Write(slices.Concat(bind, behind)); err != nil { // one segment: read with the request
				t.Fatal(err)
			}
			if got := readN(t, peer, len(behind), 1600); !bytes.Equal(got, behind) {
				t.Fatalf("peer got %x first, want the bytes behind the request %x", got, behind)
			}
			if _, err := client.Write(later); err != nil {
				t.Fatal(err)
			}
			if got := readN(t, peer, len(later), 1600); !bytes.Equal(got, later) {
				t.Fatalf("peer got %x, want %x", got, later)
			}
			if _, err := peer.Write(down); err != nil {
				t.Fatal(err)
			}
			if got := readN(t, client, len(success)+len(down), 1600); !bytes.Equal(got, slices.Concat(success, down)) {
				t.Fatalf("client got %x, want the success, then the peer's bytes", got)
			}
			if seen, _, _, _ := r.snapshot(); len(seen) != 1 {
				t.Errorf("%d frames served, want the ConnectionBind alone", len(seen))
			}
			_ = client.Close()
			if n, err := peer.Read(make([]byte, 16)); err != io.EOF {
				t.Errorf("peer Read after the client hung up = (%d, %v), want EOF", n, err)
			}
		})
	}
}
