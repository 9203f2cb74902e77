package relay

import (
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"

	"github.com/turnd/turnd/internal/bindings"
)

// The successor's side of an RFC 6062 route's hand-over (handover6062.go):
// the passed listeners, waiting peers and bound pairs' peer connections
// served here as if this relay had opened, accepted or dialled them.

// AdoptTCP serves, in the successor, the RFC 6062 relay another process
// exported for r (files, as ExportTCP returned them): as Open with w.TCP
// would, with those listeners, whose peers a downlink loop accepts, and
// the waiting peer connections held for TakePeer under their
// CONNECTION-IDs (each counts against MaxPendingConnects until bound).
// r.Client must be the client's control connection here. It returns the
// relayed address of each family. On error nothing is adopted; the files
// stay the caller's either way.
func (v Routes) AdoptTCP(r *bindings.Route, files TCPRouteFiles) (bindings.Relayed, error) {
	rl := v.rl
	var out bindings.Relayed
	if files.Listeners == [2]*os.File{} {
		return out, fmt.Errorf("adopt tcp relay: %w", bindings.ErrNoFamily)
	}
	o, _, err := rl.reserveRoute(r, true)
	if err != nil {
		return out, err
	}
	undo := func(err error) (bindings.Relayed, error) {
		v.Close(r, bindings.Both)
		rl.mu.Lock()
		delete(rl.routes, r)
		rl.mu.Unlock()
		return bindings.Relayed{}, fmt.Errorf("adopt tcp relay: %w", err)
	}
	for i, f := range files.Listeners {
		if f == nil {
			continue
		}
		l, addr, err := rl.adoptListener(r, families[i] == bindings.V6, f)
		if err != nil {
			return undo(err)
		}
		rl.mu.Lock()
		o.tcp[i] = l
		rl.mu.Unlock()
		out.Addr[i] = addr
	}
	for id, f := range files.Pending {
		pc, err := rl.adoptPeer(f, true)
		if err != nil {
			return undo(err)
		}
		if !rl.hold(r, id, pc) {
			_ = pc.Close()
			return undo(fmt.Errorf("connection id %d held twice: %w", id, ErrSocketMismatch))
		}
	}
	return out, nil
}

// adoptListener serves a passed RFC 6062 listener as r's relay of its
// family.
func (rl *Relay) adoptListener(r *bindings.Route, v6 bool, f *os.File) (*tcpListener, netip.AddrPort, error) {
	ln, err := net.FileListener(f)
	if err != nil {
		return nil, netip.AddrPort{}, fmt.Errorf("adopt listener: %w", err)
	}
	ta, ok := ln.Addr().(*net.TCPAddr)
	if !ok || (ta.IP.To4() == nil) != v6 {
		_ = ln.Close()
		return nil, netip.AddrPort{}, fmt.Errorf("adopt %v as %s: %w", ln.Addr(), tcpNetwork(v6), ErrSocketMismatch)
	}
	k := liveKey{v6: v6, port: ta.Port}
	if !rl.claimTCP(k, r) {
		_ = ln.Close()
		return nil, netip.AddrPort{}, fmt.Errorf("adopt %v: %w", ln.Addr(), ErrPortTaken)
	}
	l := &tcpListener{Listener: ln, rl: rl, key: k}
	if err := rl.watchPeers(r, l); err != nil {
		_ = l.Close()
		return nil, netip.AddrPort{}, err
	}
	ext := rl.opts.External4
	if v6 {
		ext = rl.opts.External6
	}
	if ext == nil {
		ext = ta.IP
	}
	return l, addrPort(ext, ta.Port), nil
}

// AdoptPeer serves, in the successor, a bound pair's peer connection
// another process exported (ExportPeer) for r's RFC 6062 relay, which
// AdoptTCP adopted first: counted and paced in r's tally, as TakePeer's
// are, for the edge to pipe again. The file stays the caller's.
func (v Routes) AdoptPeer(r *bindings.Route, f *os.File) (io.ReadWriteCloser, error) {
	pc, err := v.rl.adoptPeer(f, false)
	if err != nil {
		return nil, err
	}
	if pc.r.route != r {
		_ = pc.Close()
		return nil, fmt.Errorf("adopt peer connection: not of the route's relay: %w", ErrSocketMismatch)
	}
	return pc, nil
}

// adoptPeer makes a passed peer connection one of the RFC 6062 relay its
// local port belongs to: pending (waiting for ConnectionBind), or bound.
func (rl *Relay) adoptPeer(f *os.File, pending bool) (*peerConn, error) {
	nc, err := net.FileConn(f)
	if err != nil {
		return nil, fmt.Errorf("adopt peer connection: %w", err)
	}
	k, ok := tcpKey(nc.LocalAddr())
	rl.mu.Lock()
	t := rl.tcp[k]
	rl.mu.Unlock()
	if !ok || t == nil {
		_ = nc.Close()
		return nil, fmt.Errorf("adopt peer connection at %v: %w", nc.LocalAddr(), ErrNotTracked)
	}
	if pending {
		if t, err = rl.startConnect(k); err != nil {
			_ = nc.Close()
			return nil, fmt.Errorf("adopt peer connection from %v: %w", nc.RemoteAddr(), err)
		}
	}
	pc := rl.adopt(k, t, nc)
	if !pending {
		pc.once.Do(func() {}) // bound: it counts against no pending bound
	}
	return pc, nil
}
