package relay

import (
	"fmt"
	"net"
	"net/netip"

	"github.com/turnd/turnd/internal/bindings"
	"github.com/turnd/turnd/internal/mmsg"
	"github.com/turnd/turnd/internal/netaddr"
)

// Routes is the relay as turnd's own control plane drives it (the
// handlers' Relays): it opens and closes the relays of routes the
// allocation table owns, whose permissions and channels the fast paths
// read from the route. It is a view of the same Relay, its ports, loops
// and counters.
type Routes struct{ rl *Relay }

// Routes returns the relay's view for routes opened with Open.
func (rl *Relay) Routes() Routes { return Routes{rl: rl} }

// opened is what Open made for one route; under Relay.mu.
type opened struct {
	key      clientKey
	to, from limit                // the UDP relays' rates, one per allocation whatever its families
	socks    [2]*Conn             // UDP relays, by Families.Index
	tcp      [2]*tcpListener      // RFC 6062 listeners, by Families.Index
	peers    map[uint32]*peerConn // RFC 6062 peers waiting for TakePeer
	kernel   *kroute              // the kernel path's share; nil: user space only
}

func (o *opened) empty() bool {
	return o.socks == [2]*Conn{} && o.tcp == [2]*tcpListener{}
}

// families in the order Open serves them: IPv4 first, as
// XOR-RELAYED-ADDRESS lists them (RFC 8656 §7.2).
var families = [2]bindings.Families{bindings.V4, bindings.V6}

// Open opens the relay of route r for w: one UDP socket per family of
// w.Families (or, with w.TCP, one RFC 6062 listener), bound in the port
// range, read by a downlink loop and found by the uplink from r.Client.
// w.Port takes a held reservation port, w.Even an even port, w.Reserve
// an even port with the next one held (Relayed.Held: of the IPv4 address,
// or of the IPv6 one when it is the only family asked; none when that
// family is refused);
// w.DontFragment sets DF. A family it cannot open is reported in
// Relayed.Refused (bindings.ErrNoFamily, bindings.ErrNoPort) while the
// others open; the error is for a route none of whose families opened.
// r.Client must be set: a UDP client's Lane must be a socket of this
// relay's lanes (*mmsg.Socket), whose address keys the uplink as RelayFor
// does; a stream's local address (Tuple.Server) keys it as RelayStreamFor.
func (v Routes) Open(r *bindings.Route, w bindings.Want) (bindings.Relayed, error) {
	rl := v.rl
	var out bindings.Relayed
	o, lane, err := rl.reserveRoute(r, w.TCP)
	if err != nil {
		return out, err
	}
	if !w.TCP {
		r.Usage.Header, r.Usage.Header6 = udpHeader4, udpHeader6 // before a socket exists
	}
	var first error
	for i, f := range families {
		if !w.Families.Has(f) {
			continue
		}
		// R=1 reserves for the IPv4 address of a dual allocation (section
		// 3 of docs/control-plane.md), for the IPv6 one only when alone.
		reserve := w.Reserve && (f == bindings.V4 || !w.Families.Has(bindings.V4))
		addr, held, err := rl.openFamily(r, w, f, lane, reserve, o)
		if err != nil {
			out.Refused[i] = err
			if first == nil {
				first = err
			}
			continue
		}
		out.Addr[i], out.Held = addr, max(out.Held, held)
	}
	rl.mu.Lock()
	if o.empty() {
		delete(rl.routes, r)
		rl.mu.Unlock()
		if first == nil {
			first = bindings.ErrNoFamily // no family asked
		}
		return out, fmt.Errorf("open relay: %w", first)
	}
	if !w.TCP {
		rl.byClient.set(o.key, binding{route: r, socks: o.socks})
	}
	rl.mu.Unlock()
	if !w.TCP && rl.offloadable(r, lane) {
		rl.offload(r, o, w.DontFragment)
	}
	return out, nil
}

// reserveRoute records r as being opened and resolves its client: the
// lane to the relay's own socket, once.
func (rl *Relay) reserveRoute(r *bindings.Route, tcp bool) (*opened, *mmsg.Socket, error) {
	c := &r.Client
	var lane *mmsg.Socket
	var server serverID
	switch {
	case c.Stream != nil:
		server = rl.serverID(netaddr.FiveTuple{Server: netaddr.Unmap(c.Tuple.Server), TCP: true})
	case tcp:
		return nil, nil, fmt.Errorf("open tcp relay: %w", ErrNoClientWriter) // RFC 6062 §5.1: a TCP client only
	default:
		s, ok := c.Lane.(*mmsg.Socket)
		if !ok {
			return nil, nil, fmt.Errorf("open relay: %w", ErrNoClientWriter)
		}
		lane, server = s, rl.serverOf(s.LocalAddr())
	}
	o := &opened{key: clientKey{client: netaddr.Unmap(c.Tuple.Client), server: server}}
	rl.mu.Lock()
	defer rl.mu.Unlock()
	if rl.routes[r] != nil {
		return nil, nil, fmt.Errorf("open relay: %w", ErrRouteOpen)
	}
	rl.routes[r] = o
	return o, lane, nil
}

// openFamily opens r's relay of family f and records it in o.
func (rl *Relay) openFamily(r *bindings.Route, w bindings.Want, f bindings.Families, lane *mmsg.Socket,
	reserve bool, o *opened) (netip.AddrPort, int, error) {
	v6 := f == bindings.V6
	if !rl.Serves(v6) {
		return netip.AddrPort{}, 0, bindings.ErrNoFamily
	}
	if w.TCP {
		l, addr, err := rl.listenTCP(tcpNetwork(v6), w.Port, r)
		if err != nil {
			return netip.AddrPort{}, 0, refusal(err)
		}
		if err := rl.watchPeers(r, l); err != nil {
			_ = l.Close()
			return netip.AddrPort{}, 0, err
		}
		rl.mu.Lock()
		o.tcp[f.Index()] = l
		rl.mu.Unlock()
		return addr, 0, nil
	}
	s := udpSpec{network: udpNetwork(v6), port: w.Port, even: w.Even, lane: lane, route: r,
		client: &r.Client, to: &o.to, from: &o.from}
	var (
		c        *Conn
		external net.IP
		held     int
		err      error
	)
	if reserve {
		c, external, held, err = rl.openPair(s)
	} else {
		c, external, err = rl.openUDP(s)
	}
	if err != nil {
		return netip.AddrPort{}, 0, refusal(err)
	}
	if w.DontFragment {
		if err := setDontFragment(c.Socket); err != nil {
			_ = c.Close()
			return netip.AddrPort{}, 0, err
		}
	}
	rl.mu.Lock()
	o.socks[f.Index()] = c
	rl.mu.Unlock()
	return addrPort(external, c.key.port), held, nil
}

// refusal is a family's failure to bind as the handlers answer it (508):
// Serves answered for the family itself.
func refusal(err error) error { return fmt.Errorf("%w: %w", bindings.ErrNoPort, err) }

// Close closes the relays of r of the families f (one, or bindings.Both
// for all): their sockets close, data stops at once both ways, the
// uplink forgets them, and the port of a reserved pair's partner is
// released. Closing what is not open does nothing.
func (v Routes) Close(r *bindings.Route, f bindings.Families) {
	rl := v.rl
	var socks []*Conn
	var lns []*tcpListener
	var peers map[uint32]*peerConn
	rl.mu.Lock()
	o := rl.routes[r]
	if o == nil {
		rl.mu.Unlock()
		return
	}
	for i, fam := range families {
		if f&fam == 0 {
			continue
		}
		if o.socks[i] != nil {
			socks = append(socks, o.socks[i])
		}
		if o.tcp[i] != nil {
			lns = append(lns, o.tcp[i])
			o.tcp[i] = nil
		}
	}
	if o.tcp == [2]*tcpListener{} {
		peers, o.peers = o.peers, nil
	}
	if o.empty() {
		delete(rl.routes, r)
	}
	rl.mu.Unlock()
	for _, c := range socks {
		_ = c.Close() // forget takes it out of the index (unindex)
	}
	for _, l := range lns {
		_ = l.Close()
	}
	for _, pc := range peers {
		_ = pc.Close()
	}
}

// unindex takes an opened route's closed socket c out of the uplink's
// index, leaving its other family's.
func (rl *Relay) unindex(c *Conn) {
	rl.mu.Lock()
	defer rl.mu.Unlock()
	o := rl.routes[c.route]
	if o == nil {
		return // the record goes only with its last socket, and the index entry before it
	}
	i := bindings.V4.Index()
	if c.key.v6 {
		i = bindings.V6.Index()
	}
	if o.socks[i] != c {
		return
	}
	o.socks[i] = nil
	if o.socks == [2]*Conn{} {
		rl.byClient.del(o.key, c.route)
	} else {
		rl.byClient.set(o.key, binding{route: c.route, socks: o.socks})
	}
	if o.empty() {
		delete(rl.routes, c.route)
	}
}

// Unhold releases the held partner port of a reservation (an even port's
// P+1, held for its RESERVATION-TOKEN) that will not be redeemed: the
// token expired, or its allocation ended.
func (v Routes) Unhold(port int, v6 bool) {
	if s := v.rl.takeHeld(liveKey{v6: v6, port: port}); s != nil {
		_ = s.Close()
	}
}

// serverID numbers a server side of the fast path's keys (serverOf).
func (rl *Relay) serverID(k netaddr.FiveTuple) serverID {
	rl.mu.Lock()
	defer rl.mu.Unlock()
	id, ok := rl.servers[k]
	if !ok {
		id = serverID(len(rl.servers) + 1) // 0: none
		rl.servers[k] = id
	}
	return id
}

func udpNetwork(v6 bool) string {
	if v6 {
		return "udp6"
	}
	return "udp4"
}

func tcpNetwork(v6 bool) string {
	if v6 {
		return "tcp6"
	}
	return "tcp4"
}

// addrPort is an advertised address as the handlers answer it.
func addrPort(ip net.IP, port int) netip.AddrPort {
	a, _ := netip.AddrFromSlice(ip)
	return netip.AddrPortFrom(a.Unmap(), uint16(port))
}
