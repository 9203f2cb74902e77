package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"os"

	"github.com/turnd/turnd/internal/edge"
	"github.com/turnd/turnd/internal/netaddr"
	"github.com/turnd/turnd/pkg/allocation"
)

// StateVersion is the version of the state Freeze writes; Inherit reads
// it and every earlier one. 2: RFC 6062 relays and pipes move.
const StateVersion = 2

// state is what a successor needs besides the descriptors, which it names
// by their index in the files passed along.
type state struct {
	Version int             `json:"version"`
	Table   json.RawMessage `json:"table"` // allocation.Snapshot
	Edge    edge.Export     `json:"edge"`
	Routes  []routeState    `json:"routes"`
	Held    []heldState     `json:"held"`
	Pipes   []pipeState     `json:"pipes,omitempty"` // Edge.Pipes' peers (handover6062.go)
}

// routeState names one moved allocation's relay sockets, by family index,
// as indices into Inherit.Relays; -1: none.
type routeState struct {
	Client netip.AddrPort `json:"client"`
	Server netip.AddrPort `json:"server"`
	TCP    bool           `json:"tcp"`
	Files  [2]int         `json:"files"`
	// RFC6062 are an RFC 6062 relay's sockets (Files are then -1).
	RFC6062 *tcpRelayState `json:"rfc6062,omitempty"`
}

// heldState is a port held for a reservation.
type heldState struct {
	Port int   `json:"port"`
	V6   bool  `json:"v6"`
	Left int64 `json:"left_ns"`
	File int   `json:"file"`
}

// Inherit is a predecessor's Frozen state and descriptors, for New to
// serve from instead of binding: Files as received for Frozen.Files,
// Relays for Frozen.Fds. The caller closes Files; New closes each of
// Relays once it holds its own copy (thousands of them must not be held
// twice).
type Inherit struct {
	State  []byte
	Files  []*os.File
	Relays []*os.File
}

// Frozen is a server that stopped reading for a successor to take over:
// State, Files (duplicates, closed by Commit or Thaw) and Fds (the relay
// sockets' own descriptors, lent: valid until Commit or Thaw) are what to
// pass on; Names names Files then Fds, for logs. Exactly one of Commit (the
// successor serves) or Thaw (it does not) follows.
type Frozen struct {
	State []byte
	Files []*os.File
	Fds   []int
	Names []string

	s     *Server
	ex    edge.Export
	moved []*allocation.Allocation
	held  map[heldKey]bool // the held ports that move
	done  bool
}

// heldKey is a held port.
type heldKey struct {
	port int
	v6   bool
}

// Freeze stops every reader (the relay's loops, the edge's, the table's
// clock), waits for queued answers to be written, and writes out what a
// successor needs: the table's movable allocations, the client-facing
// sockets, the relay sockets and held ports. Nothing is closed; on error
// the server serves on as before.
func (s *Server) Freeze(ctx context.Context) (*Frozen, error) {
	s.freeze.Lock()
	if !s.started.Load() {
		s.freeze.Unlock()
		return nil, errors.New("freeze: server not serving")
	}
	s.stopClock()
	f, err := s.frozen(ctx)
	if err != nil {
		s.thaw()
		return nil, fmt.Errorf("freeze: %w", err)
	}
	return f, nil
}

func (s *Server) frozen(ctx context.Context) (*Frozen, error) {
	// Allocates the fleet is being asked about finish before anything
	// stops; later ones count without asking until Thaw or Commit.
	if err := s.turn.PauseAdmissions(ctx); err != nil {
		return nil, err
	}
	// The relay first: its downlink writes to TCP clients' outboxes, which
	// the edge's Pause waits to see written.
	if err := s.relay.Pause(ctx); err != nil {
		s.relay.Resume()
		return nil, err
	}
	if err := s.edge.Pause(ctx); err != nil {
		s.edge.Resume()
		s.relay.Resume()
		return nil, err
	}
	f := &Frozen{s: s}
	// A connection whose allocation cannot move stays with it.
	ex, err := s.edge.Export(s.sockets, func(tp netaddr.FiveTuple) bool {
		a, ok := s.table.Get(tp)
		return ok && !allocation.Movable(a)
	})
	if err != nil {
		s.relay.Resume()
		s.edge.Resume()
		return nil, err
	}
	streams := make(map[netaddr.FiveTuple]bool)
	for _, c := range ex.Conns {
		streams[c.Tuple] = true
	}
	// An allocation moves if the table may move it and its client does:
	// a UDP client's socket always, a TCP client's connection if the edge
	// exported it.
	movable := func(a *allocation.Allocation) bool {
		return allocation.Movable(a) && (!a.Tuple.TCP || streams[a.Tuple])
	}
	pipes, perr := s.exportPipes(&ex, movable)
	f.ex = ex
	f.Files, f.Names = ex.Files, exportNames(ex)
	if perr != nil {
		f.cancel()
		return nil, perr
	}
	pipeStates := f.freezePipes(pipes)
	snap := s.table.SnapshotOf(movable)
	snap.NonceSecret = s.nonces.Secret()
	st := state{Version: StateVersion, Edge: ex, Pipes: pipeStates}
	routes := s.relay.Routes()
	var relayNames []string
	for _, sa := range snap.Allocations {
		tp := netaddr.FiveTuple{Client: netaddr.Unmap(sa.Client), Server: netaddr.Unmap(sa.Server), TCP: sa.Transport != "udp"}
		a, ok := s.table.Get(tp)
		if !ok {
			f.cancel()
			return nil, fmt.Errorf("allocation of %v left the table while frozen", tp.Client)
		}
		rs := routeState{Client: tp.Client, Server: tp.Server, TCP: tp.TCP, Files: [2]int{-1, -1}}
		if a.PeerTCP {
			if rs.RFC6062, err = f.freezeTCP(a); err != nil {
				f.cancel()
				return nil, err
			}
			st.Routes = append(st.Routes, rs)
			f.moved = append(f.moved, a)
			continue
		}
		fds, err := routes.Lend(a.Route)
		if err != nil {
			f.cancel()
			return nil, fmt.Errorf("export relay of %v: %w", tp.Client, err)
		}
		for i, fd := range fds {
			if fd >= 0 {
				rs.Files[i] = len(f.Fds)
				f.Fds = append(f.Fds, fd)
				relayNames = append(relayNames, "relay "+a.RelayedAll()[i].String())
			}
		}
		st.Routes = append(st.Routes, rs)
		f.moved = append(f.moved, a)
	}
	// Held ports are few: duplicates, after the client-facing sockets;
	// only those of reservations that move (a TLS client's stays).
	held, err := s.relay.ExportHeld()
	if err != nil {
		f.cancel()
		return nil, err
	}
	f.held = make(map[heldKey]bool)
	for _, r := range snap.Reservations {
		f.held[heldKey{r.Port, r.V6}] = true
	}
	for _, h := range held {
		if !f.held[heldKey{h.Port, h.V6}] {
			_ = h.File.Close()
			continue
		}
		st.Held = append(st.Held, heldState{Port: h.Port, V6: h.V6, Left: int64(h.Left), File: len(f.Files)})
		f.Files, f.Names = append(f.Files, h.File), append(f.Names, fmt.Sprintf("held port %d", h.Port))
	}
	f.Names = append(f.Names, relayNames...)
	if st.Table, err = snap.Marshal(); err != nil {
		f.cancel()
		return nil, err
	}
	if f.State, err = json.Marshal(st); err != nil {
		f.cancel()
		return nil, fmt.Errorf("encode server state: %w", err)
	}
	return f, nil
}

// cancel undoes a Freeze that could not complete; the caller thaws.
func (f *Frozen) cancel() {
	closeFiles(f.Files)
	f.Files = nil
	f.s.relay.Resume()
	f.s.edge.Resume()
}

// Commit lets go of what the successor now serves: the moved allocations
// leave the table (EndMoved: no usage record here, the successor writes
// it), this process's copies of their sockets and of the client-facing
// sockets close, and what stayed (TLS clients)
// is served again. It returns how many allocations moved and stayed.
func (f *Frozen) Commit() (moved, stayed int) {
	s := f.s
	if f.done {
		return 0, 0
	}
	f.done = true
	defer s.freeze.Unlock()
	closeFiles(f.Files)
	// Not Resume on an error: the successor reads the moved sockets now.
	if err := s.edge.Release(s.sockets, f.ex); err != nil {
		s.log.Warn("hand-over: releasing the client-facing sockets", "err", err)
	}
	routes := s.relay.Routes()
	gone := make(map[*allocation.Allocation]bool, len(f.moved))
	for _, a := range f.moved {
		routes.Release(a.Route)
		routes.ReleaseTCP(a.Route)
		gone[a] = true
	}
	s.relay.ReleaseHeld(func(port int, v6 bool) bool { return f.held[heldKey{port, v6}] })
	s.table.EndWhere(func(a *allocation.Allocation) bool { return gone[a] }, allocation.EndMoved)
	if s.fleet != nil {
		s.fleet.retire() // the successor counts what moved, under this node's name
	}
	s.relay.Resume()
	s.startClock()
	return len(f.moved), s.table.Count()
}

// Thaw serves on as if Freeze had not happened: the successor failed.
func (f *Frozen) Thaw() {
	if f.done {
		return
	}
	f.done = true
	closeFiles(f.Files)
	f.s.relay.Resume()
	f.s.edge.Resume()
	f.s.thaw()
}

// thaw restarts the clock and ends the freeze.
func (s *Server) thaw() {
	s.turn.ResumeAdmissions()
	s.startClock()
	s.freeze.Unlock()
}
