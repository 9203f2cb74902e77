package edge_test

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/turnd/turnd/internal/edge"
)

// readerMode is who reads a plain TCP connection of the own plane: its
// own goroutine, or a reactor from accept.
type readerMode struct {
	name string
	loop bool
}

var readerModes = []readerMode{{"goroutine", false}, {"reactor", true}}

// pick returns the mode's reactor (nil for none) and the option choosing it.
func (m readerMode) pick(t *testing.T) (*loopReactor, func() edge.Reactor) {
	if !m.loop {
		return nil, nil
	}
	r := &loopReactor{testReactor: newTestReactor(t)}
	return r, func() edge.Reactor { return r }
}

// loopReactor is a testReactor that knows when it is inside a ready call:
// a frame served outside one was read by someone else.
type loopReactor struct {
	*testReactor
	in atomic.Int32
}

func (r *loopReactor) Watch(fd int, ready func() bool, released func()) error {
	return r.testReactor.Watch(fd, func() bool {
		r.in.Add(1)
		defer r.in.Add(-1)
		return ready()
	}, released)
}

// inReady reports whether a ready call is running.
func (r *loopReactor) inReady() bool { return r.in.Load() > 0 }

// ownTCP serves one plain TCP listener with r's paths in mode m and
// returns a connected client.
func ownTCP(t *testing.T, m readerMode, r *recorder) net.Conn {
	t.Helper()
	_, pick := m.pick(t)
	_, s := ownStreams(t, edge.Listen{TCP: []string{"127.0.0.1:0"}}, edge.StreamOptions{
		Handler: r.handler(), FastPath: func(net.Addr) edge.FastPath { return r.fastPath() }, Reactor: pick})
	return dial(t, s.TCPAddrs()[0])
}

// TestOwnStreamFraming: the one reader frames the stream once, however the
// client's writes cut it: every frame reaches the fast path (ChannelData)
// or the handler (STUN, Send indications the fast path leaves) intact and
// in order, up to the largest frames a stream carries.
func TestOwnStreamFraming(t *testing.T) {
	frames := passingFrames(t)
	in := slices.Concat(frames...)
	for _, m := range readerModes {
		for _, chunk := range []int{len(in), 1, 7, 1500} {
			t.Run(fmt.Sprintf("%s/%d-byte writes", m.name, chunk), func(t *testing.T) {
				r := newRecorder()
				client := ownTCP(t, m, r)
				if chunk == 1 { // byte by byte up to the two 64 KiB frames
					head := len(slices.Concat(frames[:len(frames)-3]...))
					writeChunks(t, client, in[:head], 1)
					r.waitSeen(t, len(frames)-3)
					writeChunks(t, client, in[head:], 4096)
				} else {
					writeChunks(t, client, in, chunk)
				}
				seen := r.waitSeen(t, len(frames))
				for i := range frames {
					if !bytes.Equal(seen[i], frames[i]) {
						t.Fatalf("frame %d (%d bytes) differs at byte %d", i, len(frames[i]), firstDiff(seen[i], frames[i]))
					}
				}
				if _, handled, taken, overlap := r.snapshot(); len(taken) != 5 || len(handled) != 5 || overlap {
					t.Errorf("fast path took %d, handler got %d (overlapping: %v), want 5 and 5 in turn", len(taken), len(handled), overlap)
				}
			})
		}
	}
}

// TestOwnStreamChannelDataPadding frames every ChannelData length modulo 4
// (RFC 8656 §12.5): a framer off by the padding would not find the STUN
// message behind it.
func TestOwnStreamChannelDataPadding(t *testing.T) {
	for _, m := range readerModes {
		t.Run(m.name, func(t *testing.T) {
			for n := range 9 {
				cd := channelData(bytes.Repeat([]byte{0xEE}, n), true)
				alloc := aliceAllocate(t)
				r := newRecorder()
				client := ownTCP(t, m, r)
				writeChunks(t, client, slices.Concat(cd, alloc, cd), 1<<20)
				seen := r.waitSeen(t, 3)
				if !bytes.Equal(seen[0], cd) || !bytes.Equal(seen[1], alloc) || !bytes.Equal(seen[2], cd) {
					t.Errorf("length %d: saw %x, want the ChannelData, the Allocate, the ChannelData", n, seen)
				}
			}
		})
	}
}

// TestOwnStreamBadFraming: a stream that is not STUN or ChannelData cannot
// be resynchronised: the frames in front of the bad bytes are served, then
// the connection is closed.
func TestOwnStreamBadFraming(t *testing.T) {
	tests := []struct {
		name string
		in   []byte
		good [][]byte
	}{
		{"0xFF", bytes.Repeat([]byte{0xFF}, 64), nil},
		{"0x80", append([]byte{0x80}, make([]byte, 40)...), nil},
		{"0xC0 after padded ChannelData", append(channelData([]byte("x"), true), 0xC0, 0, 0, 0), [][]byte{channelData([]byte("x"), true)}},
	}
	for _, m := range readerModes {
		for _, tc := range tests {
			t.Run(m.name+"/"+tc.name, func(t *testing.T) {
				r := newRecorder()
				client := ownTCP(t, m, r)
				if _, err := client.Write(tc.in); err != nil {
					t.Fatal(err)
				}
				if n, err := client.Read(make([]byte, 16)); err != io.EOF {
					t.Fatalf("client Read = (%d, %v), want the connection closed (EOF)", n, err)
				}
				if seen, _, _, _ := r.snapshot(); !slices.EqualFunc(seen, tc.good, bytes.Equal) {
					t.Errorf("served %x before the bad bytes, want %x", seen, tc.good)
				}
			})
		}
	}
}

// TestOwnStreamEOF: a client that closes has every complete frame served,
// a trailing partial frame dropped, and its connection closed.
func TestOwnStreamEOF(t *testing.T) {
	for _, m := range readerModes {
		t.Run(m.name, func(t *testing.T) {
			r := newRecorder()
			client := ownTCP(t, m, r)
			cd := channelData([]byte("last words"), true)
			if _, err := client.Write(append(append([]byte(nil), cd...), cd[:5]...)); err != nil {
				t.Fatal(err)
			}
			if err := client.(*net.TCPConn).CloseWrite(); err != nil {
				t.Fatal(err)
			}
			if n, err := client.Read(make([]byte, 16)); err != io.EOF {
				t.Fatalf("client Read = (%d, %v), want the connection closed (EOF)", n, err)
			}
			if seen, _, _, _ := r.snapshot(); len(seen) != 1 || !bytes.Equal(seen[0], cd) {
				t.Errorf("served %x, want the complete ChannelData alone", seen)
			}
		})
	}
}
