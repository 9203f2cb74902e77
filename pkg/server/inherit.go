package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/turnd/turnd/internal/bindings"
	"github.com/turnd/turnd/internal/edge"
	"github.com/turnd/turnd/internal/netaddr"
	"github.com/turnd/turnd/internal/relay"
	"github.com/turnd/turnd/pkg/allocation"
)

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
		held = append(held, relay.HeldFile{Port: h.Port, V6: h.V6, Left: time.Duration(h.Left), File: f})
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
