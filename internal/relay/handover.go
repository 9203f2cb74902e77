package relay

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"

	"github.com/turnd/turnd/internal/bindings"
	"github.com/turnd/turnd/internal/mmsg"
)

// A route's relay sockets move to a successor process (docs/handover.md):
// the old process, paused, exports duplicates of their descriptors; the
// new one adopts them into its own loops and index; once it serves, the
// old one releases its copies without ending the sockets. The kernel
// object stays the same, so the relayed address, the peers' flows and the
// datagrams queued during the switch carry over.

// RouteFiles are the UDP relay sockets of one route, duplicated for another
// process, by Families.Index (IPv4 first); nil for a family the route has
// no relay of. The files are the receiver's to close once passed or
// adopted.
type RouteFiles [2]*os.File

// Close closes every file, for a hand-over that will not use them.
func (rf RouteFiles) Close() error {
	var errs []error
	for _, f := range rf {
		if f != nil {
			errs = append(errs, f.Close())
		}
	}
	return errors.Join(errs...)
}

// Export returns duplicates of r's UDP relay sockets for another process;
// this process keeps serving them until Release, or, after Resume, again.
// Only while paused (Pause returned nil: ErrNotPaused otherwise), so that
// no datagram is read here once the copies may be read elsewhere. An RFC
// 6062 route moves with ExportTCP instead (ErrNotMovable); a route not open here is
// ErrNotTracked. Which routes move (not a TLS client's) is the caller's
// choice.
func (v Routes) Export(r *bindings.Route) (RouteFiles, error) {
	var out RouteFiles
	socks, err := v.movable(r, "export relay")
	if err != nil {
		return out, err
	}
	for i, c := range socks {
		if c == nil {
			continue
		}
		f, err := c.Socket.File()
		if err != nil {
			_ = out.Close()
			return RouteFiles{}, fmt.Errorf("export relay %v: %w", c.LocalAddr(), err)
		}
		out[i] = f
	}
	return out, nil
}

// Lend returns r's UDP relay sockets' own descriptors (-1: no relay of
// that family), for another process to receive as they are: valid until
// Release or Close, and only while paused, as for Export. A hand-over of
// thousands of allocations lends them rather than exporting duplicates,
// which would double this process's descriptors.
func (v Routes) Lend(r *bindings.Route) ([2]int, error) {
	out := [2]int{-1, -1}
	socks, err := v.movable(r, "lend relay")
	if err != nil {
		return out, err
	}
	for i, c := range socks {
		if c != nil {
			out[i] = c.Socket.Fd()
		}
	}
	return out, nil
}

// movable is r's UDP relay sockets, if r can move now.
func (v Routes) movable(r *bindings.Route, what string) ([2]*Conn, error) {
	rl := v.rl
	if !rl.isSettled() {
		return [2]*Conn{}, fmt.Errorf("%s: %w", what, ErrNotPaused)
	}
	rl.mu.Lock()
	o := rl.routes[r]
	var socks [2]*Conn
	tcp := false
	if o != nil {
		socks, tcp = o.socks, o.tcp != [2]*tcpListener{} || o.peers != nil
	}
	rl.mu.Unlock()
	switch {
	case o == nil || (socks == [2]*Conn{} && !tcp):
		return socks, fmt.Errorf("%s: %w", what, ErrNotTracked)
	case tcp:
		return socks, fmt.Errorf("%s: %w", what, ErrNotMovable)
	}
	return socks, nil
}

// Adopt serves, in the successor process, the relay sockets another
// process exported for r (files, as Export returned them): as Open would
// for w, but with those sockets instead of freshly bound ones. Each is
// read by a downlink loop, its port recorded as live (no later Open takes
// it, SetRate and ShareRate find it), and r is indexed for the uplink
// from r.Client, which the caller sets as for Open (a lane of this
// process, or the client's connection here). w.DontFragment is applied
// again (setting DF twice changes nothing); the rates start unlimited, as
// Open's do, until SetRate and ShareRate. It returns the relayed address of
// each adopted family: the socket's port, advertised at External4 or
// External6 if set, else at the socket's bound address. No reservation is
// made (Relayed.Held is 0: held ports move with AdoptHeld). On error
// nothing is adopted; the files stay the caller's either way.
func (v Routes) Adopt(r *bindings.Route, w bindings.Want, files RouteFiles) (bindings.Relayed, error) {
	rl := v.rl
	var out bindings.Relayed
	switch {
	case w.TCP:
		return out, fmt.Errorf("adopt relay: %w", ErrNotMovable)
	case files == RouteFiles{}:
		return out, fmt.Errorf("adopt relay: %w", bindings.ErrNoFamily)
	}
	o, lane, err := rl.reserveRoute(r, false)
	if err != nil {
		return out, err
	}
	r.Usage.Header, r.Usage.Header6 = udpHeader4, udpHeader6 // before a socket exists
	for i, f := range files {
		if f == nil {
			continue
		}
		c, addr, err := rl.adoptFamily(r, w, families[i], f, lane, o)
		if err != nil {
			rl.mu.Lock()
			socks := o.socks
			delete(rl.routes, r)
			rl.mu.Unlock()
			for _, c := range socks {
				if c != nil {
					rl.drop(c)
				}
			}
			return bindings.Relayed{}, fmt.Errorf("adopt relay: %w", err)
		}
		rl.mu.Lock()
		o.socks[i] = c
		rl.mu.Unlock()
		out.Addr[i] = addr
	}
	rl.mu.Lock()
	rl.byClient.set(o.key, binding{route: r, socks: o.socks})
	rl.mu.Unlock()
	if rl.offloadable(r, lane) {
		rl.offload(r, o, w.DontFragment)
	}
	return out, nil
}

// adoptFamily serves the passed socket f as r's relay of family fam.
func (rl *Relay) adoptFamily(r *bindings.Route, w bindings.Want, fam bindings.Families, f *os.File,
	lane *mmsg.Socket, o *opened) (*Conn, netip.AddrPort, error) {
	v6 := fam == bindings.V6
	sock, err := mmsg.FromFile(f)
	if err != nil {
		return nil, netip.AddrPort{}, err
	}
	local := sock.LocalAddr().(*net.UDPAddr)
	if (local.IP.To4() == nil) != v6 {
		_ = sock.Close()
		return nil, netip.AddrPort{}, fmt.Errorf("adopt %v as %s: %w", local, udpNetwork(v6), ErrSocketMismatch)
	}
	if rl.inUse(v6, local.Port) {
		_ = sock.Close()
		return nil, netip.AddrPort{}, fmt.Errorf("adopt %v: %w", local, ErrPortTaken)
	}
	if w.DontFragment {
		if err := setDontFragment(sock); err != nil {
			_ = sock.Close()
			return nil, netip.AddrPort{}, err
		}
	}
	c, err := rl.serveUDP(sock, udpSpec{network: udpNetwork(v6), lane: lane, route: r, client: &r.Client,
		to: &o.to, from: &o.from}, v6)
	if err != nil {
		return nil, netip.AddrPort{}, fmt.Errorf("adopt %v: %w", local, err)
	}
	ext := rl.opts.External4
	if v6 {
		ext = rl.opts.External6
	}
	if ext == nil {
		ext = local.IP
	}
	return c, addrPort(ext, local.Port), nil
}

// Release takes r's UDP relays out of this process once another serves
// them (after Export and the successor's Adopt): the route leaves the
// loops, the live ports and the uplink's index as if closed, but the
// sockets go on in the other process, so a held partner port is left
// alone (ReleaseHeld) and the route's tally is not published here: its
// usage moves with the allocation table. Releasing what is not open, or
// an RFC 6062 route (ReleaseTCP's), does nothing.
func (v Routes) Release(r *bindings.Route) {
	rl := v.rl
	rl.mu.Lock()
	o := rl.routes[r]
	if o == nil || o.tcp != [2]*tcpListener{} || o.peers != nil {
		rl.mu.Unlock()
		return
	}
	delete(rl.routes, r)
	rl.byClient.del(o.key, r)
	socks := o.socks
	rl.mu.Unlock()
	for _, c := range socks {
		if c != nil {
			rl.drop(c)
		}
	}
}

// drop ends this process's hold of c's socket without ending the socket
// for another process that holds it too: c leaves its loop's epoll set
// before its descriptor closes. An epoll set holds a socket by its file
// description, not its descriptor: closed first, a socket whose
// description lives on in the other process would stay in the set and
// wake the loop for every datagram the other process then reads.
func (rl *Relay) drop(c *Conn) {
	if k := c.kern.Load(); k != nil {
		k.close(c)
	}
	c.fdMu.Lock()
	c.fdClosed = true // the uplink sends no more through it
	c.fdMu.Unlock()
	if c.loop != nil {
		c.loop.remove(c)
	}
	rl.mu.Lock()
	if rl.live[c.key] == c {
		delete(rl.live, c.key)
	}
	rl.mu.Unlock()
	_ = c.Socket.Close()
	c.once.Do(func() {}) // a later Close has no tally to publish nor index to leave
}
