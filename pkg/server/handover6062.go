package server

import (
	"fmt"
	"io"
	"os"

	"github.com/turnd/turnd/internal/bindings"
	"github.com/turnd/turnd/internal/edge"
	"github.com/turnd/turnd/internal/netaddr"
	"github.com/turnd/turnd/internal/relay"
	"github.com/turnd/turnd/pkg/allocation"
)

// RFC 6062 allocations move as UDP ones do (docs/handover.md): the relay's
// listeners and waiting peer connections by duplicated descriptor, and
// each bound pair as the edge's pipe plus its peer connection. A pipe
// whose client side is TLS stays, and so does every pipe of an allocation
// that stays (its control connection is TLS).

// tcpRelayState is a moved RFC 6062 route's sockets, as indices into
// Inherit.Files: its listeners by family index (-1: none) and its peer
// connections waiting for ConnectionBind.
type tcpRelayState struct {
	Listeners [2]int         `json:"listeners"`
	Pending   []pendingState `json:"pending"`
}

// pendingState is a peer connection waiting under its CONNECTION-ID; the
// table's record holds its bind deadline.
type pendingState struct {
	ID   uint32 `json:"id"`
	File int    `json:"file"`
}

// pipeState is the moved pipe Edge.Pipes holds at the same index: its
// allocation's 5-tuple and the peer connection (an index into Files).
type pipeState struct {
	Alloc netaddr.FiveTuple `json:"alloc"`
	Peer  int               `json:"peer"`
}

// movedPipe is a pipe ExportPipes took, with its peer connection's copy.
type movedPipe struct {
	route *bindings.Route
	file  *os.File
}

// exportPipes adds to ex the pipes whose allocation moves (movable) and
// returns their peer connections' copies, in ex.Pipes' order. On error
// it closes the copies it made and ex is as before.
func (s *Server) exportPipes(ex *edge.Export, movable func(*allocation.Allocation) bool) ([]movedPipe, error) {
	routes := s.relay.Routes()
	var out []movedPipe
	var failed error
	move := func(peer io.ReadWriteCloser) bool {
		r := routes.RouteOf(peer)
		if r == nil || failed != nil {
			return false
		}
		a, ok := s.table.Get(r.Client.Tuple)
		if !ok || a.Route != r || !movable(a) {
			return false
		}
		_, f, err := routes.ExportPeer(peer)
		if err != nil {
			failed = err
			return false
		}
		out = append(out, movedPipe{route: r, file: f})
		return true
	}
	err := s.edge.ExportPipes(s.sockets, ex, move)
	if err == nil {
		err = failed
	}
	if err != nil {
		for _, p := range out {
			_ = p.file.Close()
		}
		return nil, fmt.Errorf("export pipes: %w", err)
	}
	return out, nil
}

// freezeTCP adds a's RFC 6062 relay to f: its listeners and waiting peer
// connections, duplicates closed by Commit or Thaw.
func (f *Frozen) freezeTCP(a *allocation.Allocation) (*tcpRelayState, error) {
	files, err := f.s.relay.Routes().ExportTCP(a.Route)
	if err != nil {
		return nil, fmt.Errorf("export tcp relay of %v: %w", a.Tuple.Client, err)
	}
	ts := &tcpRelayState{Listeners: [2]int{-1, -1}}
	for i, lf := range files.Listeners {
		if lf != nil {
			ts.Listeners[i] = f.addFile(lf, "tcp relay "+a.RelayedAll()[i].String())
		}
	}
	for id, pf := range files.Pending {
		ts.Pending = append(ts.Pending, pendingState{ID: id, File: f.addFile(pf, fmt.Sprintf("tcp relay peer %d", id))})
	}
	return ts, nil
}

// addFile appends a duplicate to f.Files and returns its index.
func (f *Frozen) addFile(file *os.File, name string) int {
	f.Files, f.Names = append(f.Files, file), append(f.Names, name)
	return len(f.Files) - 1
}

// inheritTCP adopts a's RFC 6062 relay from ts.
func (s *Server) inheritTCP(a *allocation.Allocation, ts tcpRelayState, file func(int) (*os.File, error)) error {
	var tf relay.TCPRouteFiles
	for i, li := range ts.Listeners {
		if li < 0 {
			continue
		}
		lf, err := file(li)
		if err != nil {
			return err
		}
		tf.Listeners[i] = lf
	}
	tf.Pending = make(map[uint32]*os.File, len(ts.Pending))
	for _, p := range ts.Pending {
		pf, err := file(p.File)
		if err != nil {
			return err
		}
		tf.Pending[p.ID] = pf
	}
	got, err := s.relay.Routes().AdoptTCP(a.Route, tf)
	if err != nil {
		return fmt.Errorf("adopt tcp relay of %v: %w", a.Tuple.Client, err)
	}
	if want := a.RelayedAll(); got.Addr != want {
		return fmt.Errorf("adopted tcp relay of %v at %v, the table says %v", a.Tuple.Client, got.Addr, want)
	}
	return nil
}

// inheritPipes adopts the moved pipes once their routes are adopted; they
// start copying with the adopted connections' readers.
func (s *Server) inheritPipes(st state, files []*os.File, file func(int) (*os.File, error)) error {
	if len(st.Pipes) != len(st.Edge.Pipes) {
		return fmt.Errorf("server state: %d pipes for %d data connections", len(st.Pipes), len(st.Edge.Pipes))
	}
	if len(st.Pipes) == 0 {
		return nil
	}
	routes := s.relay.Routes()
	peers := make([]io.ReadWriteCloser, 0, len(st.Pipes))
	closePeers := func() {
		for _, p := range peers {
			_ = p.Close()
		}
	}
	for _, p := range st.Pipes {
		a, ok := s.table.Get(p.Alloc)
		if !ok {
			closePeers()
			return fmt.Errorf("pipe of %v, which the table does not hold", p.Alloc.Client)
		}
		pf, err := file(p.Peer)
		if err != nil {
			closePeers()
			return err
		}
		peer, err := routes.AdoptPeer(a.Route, pf)
		if err != nil {
			closePeers()
			return fmt.Errorf("adopt peer connection of %v: %w", p.Alloc.Client, err)
		}
		peers = append(peers, peer)
	}
	start, err := s.edge.AdoptPipes(s.sockets, st.Edge, files, peers, s.streamOptions())
	if err != nil {
		closePeers()
		return err
	}
	streams := s.startStreams
	s.startStreams = func() {
		if streams != nil {
			streams()
		}
		start()
	}
	return nil
}

// freezePipes adds the moved pipes' peer connections to f.
func (f *Frozen) freezePipes(pipes []movedPipe) []pipeState {
	var out []pipeState
	for _, p := range pipes {
		tp := p.route.Client.Tuple
		out = append(out, pipeState{Alloc: tp, Peer: f.addFile(p.file, "tcp relay peer of "+tp.Client.String())})
	}
	return out
}
