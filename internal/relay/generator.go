package relay

import (
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/netip"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/turnd/turnd/internal/mmsg"
	"github.com/turnd/turnd/pkg/traffic"
)

// Options configure a Relay.
type Options struct {
	// IPv4 and IPv6 are the addresses relay sockets bind to, one per family;
	// nil means allocations of that family are refused (pion answers 508).
	IPv4, IPv6 net.IP
	// External4 and External6 are advertised in XOR-RELAYED-ADDRESS instead
	// of the bind address (a server behind NAT); nil means the bind address.
	External4, External6 net.IP
	// MinPort and MaxPort bound the relay ports, inclusive.
	MinPort, MaxPort int
	// Counters receives the relayed traffic totals; nil allocates fresh ones.
	Counters *traffic.Counters
	// Forbidden reports peers no data may be sent to whatever the
	// permissions say: the server's own listening and HTTP sockets, and
	// peers a reload denied (see Revoke). nil: none.
	Forbidden func(netip.AddrPort) bool
	// ConnectTimeout bounds the dial of an RFC 6062 Connect (pion answers
	// 447 when it passes); 0 means DefaultConnectTimeout.
	ConnectTimeout time.Duration
	// Panicked is told of a panic recovered in a downlink loop; the loop
	// dropped the descriptor it was handling and carried on. nil: none.
	Panicked func(v any)
}

// Relay hands out relay sockets to pion and keeps the fast path's view
// of their clients and channels. It is safe for concurrent use.
type Relay struct {
	opts Options

	mu   sync.Mutex
	live map[liveKey]*Conn
	held map[liveKey]*held // second ports of reserved pairs
	// tcp holds the RFC 6062 relays (tcprelay.go); a port number is in at
	// most one of live, held and tcp. tcpByClient finds one by its client.
	tcp         map[liveKey]*tcpRelay
	tcpByClient map[clientKey]*tcpRelay
	up          shardedMap[upKey, upRoute]
	byClient    shardedMap[clientKey, *Conn] // for Send indications

	// tcpEnded keeps the traffic of RFC 6062 relays whose listener closed
	// until pion reports their deletion (tcpusage.go); made on first use.
	tcpEnded map[liveKey]*tcpTraffic

	// servers numbers turnd's addresses (UDP sockets' and TCP or TLS
	// connections' local addresses) for the fast path's keys (serverID):
	// a handful, one per listen address and local IP; under mu.
	servers map[serverAddr]serverID

	// retiring holds closed sockets until pion reports their allocation
	// deleted (retire.go); nil once the relay has closed.
	retiring  map[liveKey]*Conn
	closed    chan struct{}
	closeOnce sync.Once

	loopsOnce sync.Once
	loops     []*downlink // one per two CPUs, started with the first allocation they serve
	loopsErr  error
	nextLoop  atomic.Uint32

	epoch time.Time // the rate limits' clock starts here (monotonic)
}

type liveKey struct {
	v6   bool
	port int
}

// New returns a Relay for opts.
func New(opts Options) *Relay {
	if opts.Counters == nil {
		opts.Counters = &traffic.Counters{}
	}
	return &Relay{
		opts: opts, live: make(map[liveKey]*Conn), held: make(map[liveKey]*held),
		tcp: make(map[liveKey]*tcpRelay), tcpByClient: make(map[clientKey]*tcpRelay),
		retiring: make(map[liveKey]*Conn), closed: make(chan struct{}), servers: make(map[serverAddr]serverID),
		epoch: time.Now(),
	}
}

// Counters returns the traffic totals of every relay socket this relay made.
func (g *Relay) Counters() *traffic.Counters { return g.opts.Counters }

// Validate reports options no allocation could be served with.
func (g *Relay) Validate() error {
	switch {
	case g.opts.IPv4 == nil && g.opts.IPv6 == nil:
		return fmt.Errorf("validate relay: %w", ErrNoAddressForFamily)
	case g.opts.MinPort < 1 || g.opts.MaxPort > 65535 || g.opts.MinPort > g.opts.MaxPort:
		return fmt.Errorf("validate relay: bad port range %d-%d", g.opts.MinPort, g.opts.MaxPort)
	}
	return nil
}

// Serves reports whether relay sockets of the family (v6 or not) can be made.
func (g *Relay) Serves(v6 bool) bool {
	if v6 {
		return g.opts.IPv6 != nil
	}
	return g.opts.IPv4 != nil
}

// family picks bind and advertised addresses for a pion network name
// ("udp4", "tcp6", ...).
func (g *Relay) family(network string) (bind, external net.IP, v6 bool, err error) {
	v6 = network[len(network)-1] == '6'
	bind, external = g.opts.IPv4, g.opts.External4
	if v6 {
		bind, external = g.opts.IPv6, g.opts.External6
	}
	if bind == nil {
		return nil, nil, v6, fmt.Errorf("allocate relay on %s: %w", network, ErrNoAddressForFamily)
	}
	if external == nil {
		external = bind
	}
	return bind, external, v6, nil
}

// eachPort calls try on the requested port, or on every port of the range
// from a random start until try succeeds: a full range is reported as
// ErrNoFreePort (pion then answers 508), never as a hang.
//
// Even ports whose odd neighbour is free are tried first. A client asking
// for EVEN-PORT with a reservation (RTP/RTCP pairs, as coturn's uclient
// does) later needs P+1; pion reserves the number but does not hold the
// port. Keeping turnd's own allocations off odd ports, and off even ports
// whose partner is taken (its pair's first half came and went), leaves P+1
// free whichever listener the pair arrives on.
func (g *Relay) eachPort(requested int, v6 bool, try func(port int) error) error {
	if requested != 0 {
		if g.tcpHolds(v6, requested) {
			return ErrNoFreePort
		}
		return try(requested)
	}
	span := g.opts.MaxPort - g.opts.MinPort + 1
	start := rand.IntN(span)
	for pass := 0; pass < 3; pass++ {
		for i := 0; i < span; i++ {
			p := g.opts.MinPort + (start+i)%span
			switch {
			case pass == 0 && (p%2 != 0 || g.inUse(v6, p+1)),
				pass == 1 && (p%2 != 0 || !g.inUse(v6, p+1)),
				pass == 2 && p%2 == 0,
				g.tcpHolds(v6, p): // a UDP bind would not notice an RFC 6062 relay there
				continue
			}
			if try(p) == nil {
				return nil
			}
		}
	}
	return ErrNoFreePort
}

// inUse reports whether turnd holds port as a relay (live or reserved).
func (g *Relay) inUse(v6 bool, port int) bool {
	k := liveKey{v6: v6, port: port}
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.live[k] != nil || g.held[k] != nil || g.tcp[k] != nil
}

// AllocateUDP makes the UDP relay socket of an allocation, on network
// ("udp4" or "udp6") and port (0: any in the range), for a client arriving
// on the client-facing UDP socket lane: a downlink loop reads its relay
// socket and answers the client through the lane. A nil lane leaves the
// downlink to pion's read loop (and Conn.ReadFrom's fast path), as for TLS
// clients; such a relay socket is waited on through an epoll set of its own
// (see mmsg.Socket), one more descriptor per allocation.
func (g *Relay) AllocateUDP(network string, port int, lane *mmsg.Socket) (net.PacketConn, net.Addr, error) {
	return g.allocateUDP(network, port, lane, lane != nil)
}

// AllocateUDPForStream is AllocateUDP for an allocation of a plain TCP
// client: a downlink loop serves it, writing to the client's connection
// without waiting (see AttachClient). TLS clients are served by pion's read
// loop (AllocateUDP with no lane): their writes go through crypto/tls.
func (g *Relay) AllocateUDPForStream(network string, port int) (net.PacketConn, net.Addr, error) {
	return g.allocateUDP(network, port, nil, true)
}

func (g *Relay) allocateUDP(network string, requested int, lane *mmsg.Socket, loop bool) (net.PacketConn, net.Addr, error) {
	bind, external, v6, err := g.family(network)
	if err != nil {
		return nil, nil, err
	}
	var conn *mmsg.Socket
	if requested != 0 {
		conn = g.takeHeld(liveKey{v6: v6, port: requested})
	}
	if conn == nil {
		err = g.eachPort(requested, v6, func(port int) error {
			c, lerr := listenRelay(network, bind, port)
			conn = c
			return lerr
		})
	}
	if err != nil {
		return nil, nil, fmt.Errorf("allocate udp relay: %w", err)
	}
	port := conn.LocalAddr().(*net.UDPAddr).Port
	cc := &Conn{Socket: conn, gen: g, key: liveKey{v6: v6, port: port}, lane: lane,
		txids: rand.NewPCG(rand.Uint64(), rand.Uint64()), head: dataIndicationHead4}
	if lane != nil {
		cc.server = g.serverOf(lane.LocalAddr())
	}
	if v6 {
		cc.head = dataIndicationHead6
	}
	cc.fd = int32(conn.Fd())
	if cc.raw, err = mmsg.NewRaw(conn); err != nil {
		_ = conn.Close()
		return nil, nil, fmt.Errorf("allocate udp relay: %w", err)
	}
	if loop {
		if err := g.watch(cc); err != nil {
			_ = conn.Close()
			return nil, nil, fmt.Errorf("allocate udp relay: %w", err)
		}
	}
	g.mu.Lock()
	g.live[cc.key] = cc
	g.mu.Unlock()
	return cc, &net.UDPAddr{IP: external, Port: port}, nil
}

// listenRelay binds a relay socket on bind:port, outside the runtime's
// poller (see mmsg.Socket): a downlink loop or pion's read loop reads it.
func listenRelay(network string, bind net.IP, port int) (*mmsg.Socket, error) {
	return mmsg.ListenUDP(network, net.JoinHostPort(bind.String(), strconv.Itoa(port)), nil)
}

// watch hands the relay socket of a UDP or plain TCP client's allocation to
// a downlink loop, round robin.
func (g *Relay) watch(c *Conn) error {
	g.loopsOnce.Do(func() {
		for range downlinkLoops(runtime.GOMAXPROCS(0)) {
			d, err := newDownlink(g)
			if err != nil {
				g.loopsErr = err
				return
			}
			g.loops = append(g.loops, d)
		}
	})
	if g.loopsErr != nil {
		return g.loopsErr
	}
	d := g.loops[int(g.nextLoop.Add(1))%len(g.loops)]
	c.done = make(chan struct{})
	if err := d.add(c); err != nil {
		return err
	}
	c.loop = d
	return nil
}

// conn finds the live UDP relay socket advertised as relayAddr.
func (g *Relay) conn(relayAddr net.Addr) (*Conn, error) {
	ua, ok := relayAddr.(*net.UDPAddr)
	if !ok {
		return nil, fmt.Errorf("relay %v: %w", relayAddr, ErrNotTracked)
	}
	g.mu.Lock()
	cc := g.live[liveKey{v6: ua.IP.To4() == nil, port: ua.Port}]
	g.mu.Unlock()
	if cc == nil {
		return nil, fmt.Errorf("relay %v: %w", relayAddr, ErrNotTracked)
	}
	return cc, nil
}

// forget drops a closed socket and every uplink route through it.
func (g *Relay) forget(c *Conn) {
	g.mu.Lock()
	if g.live[c.key] == c {
		delete(g.live, c.key)
	}
	g.mu.Unlock()
	g.releasePartner(c.key)
	if cp := c.client.Load(); cp != nil {
		g.byClient.del(cp.key(c.server), c)
		if chans := c.chans.Load(); chans != nil {
			for _, ch := range *chans {
				g.up.del(upKey{client: unmap(cp.addr), server: c.server, number: ch.number}, c)
			}
		}
	}
}

// SetDontFragment turns on DF for the live UDP relay socket advertised as relayAddr.
func (g *Relay) SetDontFragment(relayAddr net.Addr) error {
	cc, err := g.conn(relayAddr)
	if err != nil {
		return fmt.Errorf("set don't-fragment: %w", err)
	}
	return setDontFragment(cc.Socket)
}

// AttachClient tells the relay advertised as relayAddr who its client is,
// which turns on the fast paths for it: a UDP client is answered through the
// allocation's lane; a TCP or TLS client through stream, its connection
// (nil leaves a stream client to pion); server is turnd's side of the
// client's 5-tuple. client must be the address object pion keyed the
// allocation by: once the relay socket is closed, ReadFrom returns only
// after Deleted (or Close), having retired it (retire.go).
func (g *Relay) AttachClient(relayAddr, client, server net.Addr, stream io.Writer) error {
	if k, ok := tcpKey(relayAddr); ok {
		return g.attachTCP(k, client, server)
	}
	cc, err := g.conn(relayAddr)
	if err != nil {
		return fmt.Errorf("attach client: %w", err)
	}
	cc.retireAfterReport(client)
	if cc.lane == nil {
		cc.server = g.serverOf(server) // a UDP client's is its lane's, set with the socket
	}
	var cp *clientPath
	switch a := client.(type) {
	case *net.UDPAddr:
		if cc.lane == nil {
			return nil
		}
		cp = &clientPath{sock: cc.lane, addr: a.AddrPort()}
	case *net.TCPAddr:
		if stream == nil {
			if cc.loop != nil {
				return fmt.Errorf("attach client %v: %w", client, ErrNoClientWriter)
			}
			return nil
		}
		cp = &clientPath{stream: stream, addr: a.AddrPort()}
		cp.try, _ = stream.(tryWriter)
	default:
		return nil
	}
	cc.client.Store(cp)
	g.byClient.set(cp.key(cc.server), cc)
	return nil
}

// Permit mirrors a permission pion installed (or, with revoke, removed) into
// the indication fast paths of the relay advertised as relayAddr.
func (g *Relay) Permit(relayAddr net.Addr, peer net.IP, revoke bool) error {
	if k, ok := tcpKey(relayAddr); ok {
		if a, ok := netip.AddrFromSlice(peer); ok {
			g.permitTCP(k, a.Unmap(), revoke)
		}
		return nil
	}
	cc, err := g.conn(relayAddr)
	if err != nil {
		if revoke {
			return nil
		}
		return fmt.Errorf("permit: %w", err)
	}
	a, ok := netip.AddrFromSlice(peer)
	if !ok {
		return nil
	}
	cc.setPermission(a.Unmap(), revoke)
	return nil
}

// BindChannel mirrors a channel pion bound (or, with unbind, removed) into
// the fast paths of the relay advertised as relayAddr.
func (g *Relay) BindChannel(relayAddr, peer net.Addr, number uint16, unbind bool) error {
	if k, ok := tcpKey(relayAddr); ok {
		g.bindTCP(k, number, unbind)
		return nil
	}
	cc, err := g.conn(relayAddr)
	if err != nil {
		if unbind {
			return nil // the allocation is gone already, and its routes with it
		}
		return fmt.Errorf("bind channel: %w", err)
	}
	pa, ok := peer.(*net.UDPAddr)
	if !ok {
		return nil
	}
	peerAP := unmap(pa.AddrPort())
	cc.setChannel(peerAP, number, unbind)
	cp := cc.client.Load()
	if cp == nil {
		return nil
	}
	k := upKey{client: unmap(cp.addr), server: cc.server, number: number}
	if unbind {
		g.up.del(k, cc)
		return nil
	}
	g.up.set(k, upRoute{conn: cc, peer: peerAP})
	return nil
}

// Permissions returns how many peers the allocation of a client's 5-tuple
// (client, and server: turnd's side) permits, and a test for one peer; ok
// is false when the fast path does not know the client.
func (g *Relay) Permissions(client netip.AddrPort, server net.Addr) (int, func(netip.Addr) bool, bool) {
	c := g.clientConn(client, server)
	if c == nil {
		return g.tcpPermissions(client, server)
	}
	n := 0
	if p := c.perms.Load(); p != nil {
		n = len(*p)
	}
	return n, c.permitted, true
}

// Channels returns how many channels the allocation of a client's 5-tuple
// binds (as Permissions), and a test for one channel number; ok is false
// when the client is unknown.
func (g *Relay) Channels(client netip.AddrPort, server net.Addr) (int, func(uint16) bool, bool) {
	c := g.clientConn(client, server)
	if c == nil {
		return g.tcpChannels(client, server)
	}
	chans := c.chans.Load()
	if chans == nil {
		return 0, func(uint16) bool { return false }, true
	}
	list := *chans
	return len(list), func(num uint16) bool {
		for _, ch := range list {
			if ch.number == num {
				return true
			}
		}
		return false
	}, true
}

// serverOf numbers turnd's side of a 5-tuple (a UDP or TCP address) for
// the fast path's keys, giving it a number the first time (serverID).
// Called per allocation and per socket or connection, never per packet.
func (g *Relay) serverOf(addr net.Addr) serverID {
	k := serverKey(addr)
	g.mu.Lock()
	defer g.mu.Unlock()
	id, ok := g.servers[k]
	if !ok {
		id = serverID(len(g.servers) + 1) // 0: none
		g.servers[k] = id
	}
	return id
}

// clientConn finds the allocation of a client's 5-tuple.
func (g *Relay) clientConn(client netip.AddrPort, server net.Addr) *Conn {
	g.mu.Lock()
	id, ok := g.servers[serverKey(server)]
	g.mu.Unlock()
	if !ok {
		return nil
	}
	c, _ := g.byClient.get(clientKey{client: unmap(client), server: id})
	return c
}

// serverAddr is turnd's side of a 5-tuple: an address and a transport.
type serverAddr struct {
	addr   netip.AddrPort
	stream bool
}

func serverKey(addr net.Addr) serverAddr {
	switch a := addr.(type) {
	case *net.UDPAddr:
		return serverAddr{addr: unmap(a.AddrPort())}
	case *net.TCPAddr:
		return serverAddr{addr: unmap(a.AddrPort()), stream: true}
	}
	return serverAddr{}
}
