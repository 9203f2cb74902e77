package edge_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/turnd/turnd/internal/bindings"
	"github.com/turnd/turnd/internal/edge"
	"github.com/turnd/turnd/internal/wire"
)

// fakePeer is an RFC 6062 peer connection that keeps what it is sent and
// sends nothing until closed.
type fakePeer struct {
	mu      sync.Mutex
	got     []byte
	changed chan struct{} // a coalesced signal per write
	closed  chan struct{}
	once    sync.Once
}

func (p *fakePeer) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.got = append(p.got, b...)
	select {
	case p.changed <- struct{}{}:
	default:
	}
	return len(b), nil
}

// waitGot waits until the peer holds n bytes, and returns them.
func (p *fakePeer) waitGot(t *testing.T, n int) []byte {
	t.Helper()
	deadline := time.After(ioTimeout)
	for {
		p.mu.Lock()
		got := p.got
		p.mu.Unlock()
		if len(got) >= n {
			return got
		}
		select {
		case <-p.changed:
		case <-deadline:
			t.Fatalf("peer got %d bytes, want the %d behind the ConnectionBind", len(got), n)
		}
	}
}

func (p *fakePeer) Read([]byte) (int, error) {
	<-p.closed
	return 0, io.EOF
}

func (p *fakePeer) Close() error {
	p.once.Do(func() { close(p.closed) })
	return nil
}

// notifyConn tells when the edge closes it: its reader is done.
type notifyConn struct {
	net.Conn
	once   sync.Once
	closed chan struct{}
}

func (c *notifyConn) Close() error {
	c.once.Do(func() { close(c.closed) })
	return c.Conn.Close()
}

// ownFrames is what the one reader serves of a client's stream: every
// complete frame in order until bytes that are neither STUN nor
// ChannelData; with pipe, a ConnectionBind request ends the framing and
// the rest goes to the peer.
func ownFrames(data []byte, pipe bool) (frames [][]byte, rest []byte) {
	for len(data) >= 4 {
		var n int
		switch data[0] >> 6 {
		case 0:
			n = 20 + int(binary.BigEndian.Uint16(data[2:4]))
		case 1:
			n = (4 + int(binary.BigEndian.Uint16(data[2:4])) + 3) &^ 3
		default:
			return frames, nil
		}
		if n > len(data) {
			break
		}
		frames, data = append(frames, data[:n]), data[n:]
		if pipe && data != nil && wire.Type(frames[len(frames)-1]) == wire.TypeConnectionBindRequest {
			return frames, data
		}
	}
	return frames, nil
}

// FuzzOwnStream feeds an arbitrary byte stream to the own plane's reader,
// as a client would send it: it must never panic or hang, serve exactly
// the complete frames in order, answer through the outbox, and, when a
// ConnectionBind is accepted, pipe every byte behind it to the peer.
func FuzzOwnStream(f *testing.F) {
	seeds := fuzzSeeds(f)
	f.Add(slices.Concat(seeds...))
	bind := seeds[len(seeds)-2]
	f.Add(slices.Concat(bind, []byte{0xFF, 0xFF, 0xFF, 0xFF, 0x00}, channelData([]byte("x"), true)))
	f.Add(slices.Concat(channelData(bytes.Repeat([]byte{1}, 0xFFFF), true), aliceAllocate(f, dontFragment())))
	f.Add([]byte{0x00, 0x01, 0xFF, 0xFF, 0x21, 0x12, 0xA4, 0x42})
	f.Add(append([]byte{0xFF, 0xFF}, bytes.Repeat([]byte{1}, 200000)...))
	for _, s := range seeds {
		f.Add(s)
	}
	f.Fuzz(ownStreamCase)
}

// ownStreamCase is one input of FuzzOwnStream, read with and without an
// accepted ConnectionBind.
func ownStreamCase(t *testing.T, data []byte) {
	for _, pipe := range []bool{false, true} {
		peer := &fakePeer{closed: make(chan struct{}), changed: make(chan struct{}, 1)}
		r := newRecorder()
		r.serve = func(msg []byte, from *bindings.Client) {
			from.Send(msg[:20])
			if pipe && wire.Type(msg) == wire.TypeConnectionBindRequest {
				from.Stream.Pipe(peer)
			}
		}
		serverEnd, client := net.Pipe()
		server := &notifyConn{Conn: serverEnd, closed: make(chan struct{})}
		_ = client.SetDeadline(time.Now().Add(5 * time.Second))
		e := edge.New(nil)
		go func() {
			_ = e.ServeStreams(&pipeListener{conn: server}, edge.StreamOptions{Handler: r.handler(),
				FastPath: func(net.Addr) edge.FastPath { return r.fastPath() }})
		}()
		go func() { _, _ = io.Copy(io.Discard, client) }() // the answers
		go func() { _, _ = client.Write(data) }()
		// Everything served (or piped), then the client hangs up.
		want, rest := ownFrames(data, pipe)
		r.waitSeen(t, len(want))
		if rest != nil {
			peer.waitGot(t, len(rest))
		}
		_ = client.Close()
		select {
		case <-server.closed:
		case <-time.After(ioTimeout):
			t.Fatalf("pipe %v: the reader hung", pipe)
		}
		seen, _, _, overlap := r.snapshot()
		if !slices.EqualFunc(seen, want, bytes.Equal) || overlap {
			t.Fatalf("pipe %v: served %d frames (overlapping: %v), want %d", pipe, len(seen), overlap, len(want))
		}
		peer.mu.Lock()
		got := peer.got
		peer.mu.Unlock()
		if !bytes.Equal(got, rest) {
			t.Fatalf("peer got %x, want the bytes behind the ConnectionBind %x", got, rest)
		}
	}
}

// FuzzOwnStreamReactor sends an arbitrary stream over loopback TCP in
// chunks of any size, read by a relay loop and by the connection's own
// goroutine: both serve exactly the complete frames, in order, never two
// at once, then close the connection.
func FuzzOwnStreamReactor(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		f.Add(s, uint16(7))
	}
	f.Add(slices.Concat(passingFrames(f)...), uint16(700))
	f.Add(slices.Concat(channelData([]byte("a"), true), []byte{0xFF, 0xFF, 0, 0}, channelData(nil, true)), uint16(3))
	f.Fuzz(func(t *testing.T, data []byte, chunk uint16) {
		size := int(chunk)%2048 + 1
		want, _ := ownFrames(data, false)
		for _, m := range readerModes {
			r := newRecorder()
			client := ownTCP(t, m, r)
			for b := data; len(b) > 0; b = b[min(size, len(b)):] {
				if _, err := client.Write(b[:min(size, len(b))]); err != nil {
					break // the reader gave up on bad framing
				}
			}
			_ = client.(*net.TCPConn).CloseWrite()
			if _, err := io.Copy(io.Discard, client); errors.Is(err, os.ErrDeadlineExceeded) {
				t.Fatalf("%s: the reader never closed the connection", m.name)
			}
			seen, _, _, overlap := r.snapshot()
			if !slices.EqualFunc(seen, want, bytes.Equal) || overlap {
				t.Fatalf("%s: served %d frames (overlapping: %v), want %d", m.name, len(seen), overlap, len(want))
			}
		}
	})
}
