package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"time"

	"github.com/turnd/turnd/internal/bindings"
	"github.com/turnd/turnd/internal/edge"
	"github.com/turnd/turnd/internal/netaddr"
	"github.com/turnd/turnd/internal/relay"
	"github.com/turnd/turnd/pkg/allocation"
)

// StateVersion is the version of the state Freeze writes; Inherit reads
// it and every earlier one. 2: RFC 6062 relays and pipes move.
const StateVersion = 2

// ErrStateVersion means a state written by a binary of another version.
var ErrStateVersion = errors.New("unknown server state version")

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

	s      *Server
	ex     edge.Export
	moved  []*allocation.Allocation
	done   bool
	reason error
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
	ex, err := s.edge.Export(s.sockets)
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
	// Held ports are few: duplicates, after the client-facing sockets.
	held, err := s.relay.ExportHeld()
	if err != nil {
		f.cancel()
		return nil, err
	}
	for _, h := range held {
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
// sockets close, and what stayed (TLS clients, RFC 6062 allocations)
// is served again. It returns how many allocations moved and stayed.
func (f *Frozen) Commit() (moved, stayed int) {
	s := f.s
	if f.done {
		return 0, 0
	}
	f.done = true
	defer s.freeze.Unlock()
	closeFiles(f.Files)
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
	s.relay.ReleaseHeld()
	s.table.EndWhere(func(a *allocation.Allocation) bool { return gone[a] }, allocation.EndMoved)
	s.handedOver.Store(true)
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
	s.startClock()
	s.freeze.Unlock()
}

// HandedOver reports whether a successor took over this server's sockets.
func (s *Server) HandedOver() bool { return s.handedOver.Load() }

// inherited is a predecessor's state, decoded.
type inherited struct {
	st     state
	snap   allocation.Snapshot
	files  []*os.File
	relays []*os.File
}

// decodeInherit reads a predecessor's state strictly: a field this binary
// does not know means a format it does not know.
func decodeInherit(in *Inherit) (*inherited, error) {
	var st state
	d := json.NewDecoder(bytes.NewReader(in.State))
	d.DisallowUnknownFields()
	if err := d.Decode(&st); err != nil {
		var probe struct{ Version int }
		if json.Unmarshal(in.State, &probe) == nil && (probe.Version < 1 || probe.Version > StateVersion) {
			return nil, fmt.Errorf("server state version %d: %w", probe.Version, ErrStateVersion)
		}
		return nil, fmt.Errorf("decode server state: %w", err)
	}
	if st.Version < 1 || st.Version > StateVersion {
		return nil, fmt.Errorf("server state version %d: %w", st.Version, ErrStateVersion)
	}
	snap, err := allocation.ParseSnapshot(st.Table)
	if err != nil {
		return nil, err
	}
	return &inherited{st: st, snap: snap, files: in.Files, relays: in.Relays}, nil
}

// inherit builds the server's sockets, table and relays from a
// predecessor's state; on error the caller closes what it made.
func (s *Server) inherit(in *inherited) error {
	st, snap := in.st, in.snap
	file := func(i int) (*os.File, error) {
		if i < 0 || i >= len(in.files) {
			return nil, fmt.Errorf("server state names descriptor %d of %d", i, len(in.files))
		}
		return in.files[i], nil
	}
	streams, err := s.adoptSockets(st.Edge, in.files)
	if err != nil {
		return err
	}
	client := func(tp netaddr.FiveTuple) (bindings.Client, error) {
		if tp.TCP {
			c, ok := streams[tp]
			if !ok {
				return bindings.Client{}, fmt.Errorf("no connection passed for %v", tp.Client)
			}
			return *c, nil
		}
		for _, sock := range s.sockets.UDP {
			if netaddr.AddrPort(sock.LocalAddr()) == tp.Server {
				return bindings.Client{Tuple: tp, Lane: sock}, nil
			}
		}
		return bindings.Client{}, fmt.Errorf("no socket passed for %v", tp.Server)
	}
	if err := s.table.Restore(snap, client); err != nil {
		return err
	}
	routes := s.relay.Routes()
	for _, rs := range st.Routes {
		tp := netaddr.FiveTuple{Client: rs.Client, Server: rs.Server, TCP: rs.TCP}
		a, ok := s.table.Get(tp)
		if !ok {
			return fmt.Errorf("relay sockets of %v, which the table does not hold", tp.Client)
		}
		if rs.RFC6062 != nil {
			if err := s.inheritTCP(a, *rs.RFC6062, file); err != nil {
				return err
			}
			s.holdRates(a)
			continue
		}
		var rf relay.RouteFiles
		w := bindings.Want{DontFragment: a.DontFragment, User: a.User}
		for i, ri := range rs.Files {
			if ri < 0 {
				continue
			}
			if ri >= len(in.relays) || in.relays[ri] == nil {
				return fmt.Errorf("server state names relay socket %d of %d", ri, len(in.relays))
			}
			rf[i] = in.relays[ri]
			w.Families |= [2]bindings.Families{bindings.V4, bindings.V6}[i]
		}
		got, err := routes.Adopt(a.Route, w, rf)
		if err != nil {
			return fmt.Errorf("adopt relay of %v: %w", tp.Client, err)
		}
		// Held once: Adopt keeps its own copy.
		for i, ri := range rs.Files {
			if ri >= 0 {
				_ = rf[i].Close()
				in.relays[ri] = nil
			}
		}
		if want := a.RelayedAll(); got.Addr != want {
			return fmt.Errorf("adopted relay of %v at %v, the table says %v", tp.Client, got.Addr, want)
		}
		s.holdRates(a)
	}
	if err := s.inheritPipes(st, in.files, file); err != nil {
		return err
	}
	var held []relay.HeldFile
	for _, h := range st.Held {
		f, err := file(h.File)
		if err != nil {
			return err
		}
		held = append(held, relay.HeldFile{Port: h.Port, V6: h.V6, Left: durationNS(h.Left), File: f})
	}
	return s.relay.AdoptHeld(held)
}

// adoptSockets makes the client-facing sockets and the moved client
// connections of ex's descriptors; the connections' readers start with
// the server.
func (s *Server) adoptSockets(ex edge.Export, files []*os.File) (map[netaddr.FiveTuple]*bindings.Client, error) {
	l, err := s.listen(*s.cfg.Load())
	if err != nil {
		return nil, err
	}
	if s.sockets, err = edge.Adopt(l, ex, files); err != nil {
		return nil, err
	}
	adopted, err := s.edge.AdoptStreams(s.sockets, ex, files, s.streamOptions())
	if err != nil {
		return nil, err
	}
	s.startStreams = adopted.Start
	return adopted.Clients, nil
}

// exportNames names ex's descriptors for the log.
func exportNames(ex edge.Export) []string {
	names := make([]string, len(ex.Files))
	for _, u := range ex.UDP {
		names[u.File] = "udp " + u.Bound
	}
	for _, k := range ex.Locks {
		names[k.File] = "lock " + k.Key
	}
	for _, ln := range ex.Listeners {
		names[ln.File] = ln.Kind + " " + ln.Bound
	}
	for _, c := range ex.Conns {
		names[c.File] = "tcp client " + c.Tuple.Client.String()
	}
	for _, p := range ex.Pipes {
		names[p.File] = "tcp data connection " + p.Tuple.Client.String()
	}
	return names
}

func closeFiles(fs []*os.File) {
	for _, f := range fs {
		if f != nil {
			_ = f.Close()
		}
	}
}

// durationNS is a duration written in nanoseconds.
func durationNS(ns int64) time.Duration { return time.Duration(ns) }
