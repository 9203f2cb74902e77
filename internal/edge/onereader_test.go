package edge_test

import (
	"bytes"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/turnd/turnd/internal/edge"
)

// TestOneReaderPerConnection: each connection has one reader for its whole
// life, from accept: with a reactor, the reactor (no Read by anyone else,
// before any allocation), else the connection's own goroutine. Several
// clients writing at once each have their frames served in their order,
// never two at a time, the data frames and the requests by the same reader.
func TestOneReaderPerConnection(t *testing.T) {
	const clients = 4
	var stream [][]byte
	for range 3 {
		stream = append(stream, passingFrames(t)...)
	}
	in := slices.Concat(stream...)
	for _, m := range readerModes {
		t.Run(m.name, func(t *testing.T) {
			r := newRecorder()
			reactor, pick := m.pick(t)
			var outside atomic.Int32 // frames served outside the reactor's ready
			if reactor != nil {
				r.check = func() {
					if !reactor.inReady() {
						outside.Add(1)
					}
				}
			}
			_, s := ownStreams(t, edge.Listen{TCP: []string{"127.0.0.1:0"}}, edge.StreamOptions{
				Handler: r.handler(), FastPath: func(net.Addr) edge.FastPath { return r.fastPath() }, Reactor: pick})
			conns := make([]net.Conn, clients)
			for i := range conns {
				conns[i] = dial(t, s.TCPAddrs()[0])
				if reactor != nil {
					reactor.waitWatch(t) // from accept: nothing was sent yet
				}
			}
			var wg sync.WaitGroup
			for _, c := range conns {
				wg.Go(func() {
					for b := in; len(b) > 0; b = b[min(700, len(b)):] {
						if _, err := c.Write(b[:min(700, len(b))]); err != nil {
							t.Errorf("write: %v", err)
							return
						}
					}
				})
			}
			wg.Wait()
			r.waitSeen(t, clients*len(stream))
			r.mu.Lock()
			defer r.mu.Unlock()
			if r.overlap {
				t.Error("two calls for one connection overlapped")
			}
			for _, c := range conns {
				got := r.each[c.LocalAddr().String()]
				if !slices.EqualFunc(got, stream, bytes.Equal) {
					t.Errorf("client %v: %d frames served, want its %d in order", c.LocalAddr(), len(got), len(stream))
				}
			}
			if reactor != nil && reactor.readyCalls() == 0 {
				t.Error("the reactor never read a connection")
			}
			if n := outside.Load(); n > 0 {
				t.Errorf("%d frames were served by a reader other than the reactor", n)
			}
		})
	}
}
