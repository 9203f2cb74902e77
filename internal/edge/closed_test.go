package edge_test

import (
	"net"
	"testing"
	"time"

	"github.com/turnd/turnd/internal/bindings"
	"github.com/turnd/turnd/internal/edge"
)

// TestOwnStreamClosedIsTold: a connection the client closes is reported
// to StreamOptions.Closed once, with the Client its messages were served
// with (the allocation it carried ends with it), whoever reads it.
func TestOwnStreamClosedIsTold(t *testing.T) {
	for _, m := range readerModes {
		t.Run(m.name, func(t *testing.T) {
			r := newRecorder()
			closed := make(chan *bindings.Client, 2)
			_, pick := m.pick(t)
			_, s := ownStreams(t, edge.Listen{TCP: []string{"127.0.0.1:0"}}, edge.StreamOptions{
				Handler: r.handler(), Reactor: pick, Closed: func(c *bindings.Client) { closed <- c }})
			client := dial(t, s.TCPAddrs()[0])
			local := client.LocalAddr().(*net.TCPAddr).AddrPort()
			_ = client.Close()
			select {
			case c := <-closed:
				if c.Tuple.Client != local || c.Stream == nil {
					t.Errorf("Closed told of %v (stream %v), want the client %v", c.Tuple.Client, c.Stream != nil, local)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("Closed not told of a connection the client closed")
			}
			select {
			case <-closed:
				t.Error("Closed told twice")
			case <-time.After(50 * time.Millisecond):
			}
		})
	}
}
