package relay

import (
	"fmt"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/turnd/turnd/internal/bindings"
	"github.com/turnd/turnd/internal/netaddr"
	"github.com/turnd/turnd/internal/traffic"
)

// Options configure a Relay.
type Options struct {
	// IPv4 and IPv6 are the addresses relay sockets bind to, one per family;
	// nil means allocations of that family are refused (answered 440 or 508).
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
	// ConnectTimeout bounds the dial of an RFC 6062 Connect (answered 447
	// when it passes); 0 means DefaultConnectTimeout.
	ConnectTimeout time.Duration
	// PeerArrived is told of a peer's connection to the RFC 6062 listener
	// of a route opened with Open (RFC 6062 §5.3), once the relay has
	// admitted it (permission, Options.Forbidden, the pending bound): it
	// returns the CONNECTION-ID the client is offered, or false to refuse
	// the peer. The peer then waits for TakePeer. nil: every peer is
	// refused. It runs in a downlink loop: it must not block, nor close r
	// itself (Routes.Close would wait for it to return).
	PeerArrived func(r *bindings.Route, peer netip.AddrPort) (id uint32, ok bool)
	// Panicked is told of a panic recovered in a downlink loop; the loop
	// dropped the descriptor it was handling and carried on. nil: none.
	Panicked func(v any)
	// Kernel relays UDP clients' ChannelData in the kernel (kernel.go);
	// nil: all in user space. KernelFailed is told when it refuses an
	// entry or a count (that traffic stays in user space); nil: none.
	Kernel       Kernel
	KernelFailed func(error)
}

// Relay owns the peer-facing side of every allocation: its relay sockets
// and ports, RFC 6062 listeners and dials, the fast path's tables of
// clients, permissions and channels, and the downlink loops that move
// peers' data to clients. It is safe for concurrent use.
type Relay struct {
	opts Options

	mu   sync.Mutex
	live map[liveKey]*Conn
	held map[liveKey]*held // second ports of reserved pairs
	// tcp holds the RFC 6062 relays (tcprelay.go); a port number is in at
	// most one of live, held and tcp.
	tcp      map[liveKey]*tcpRelay
	byClient shardedMap[clientKey, binding] // the uplink's index: a client's route and relay sockets
	routes   map[*bindings.Route]*opened    // what Open made (open.go)

	// servers numbers turnd's addresses (UDP sockets' and TCP or TLS
	// connections' local addresses) for the fast path's keys (serverID):
	// a handful, one per listen address and local IP; under mu.
	servers map[netaddr.FiveTuple]serverID

	closed    chan struct{}
	closeOnce sync.Once

	loopsOnce sync.Once
	loops     []*downlink // one per two CPUs, started with the first allocation they serve; written under pauseMu
	loopsErr  error
	nextLoop  atomic.Uint32

	// pauseMu orders Pause, Resume and the loops' start (pause.go): a
	// loop started while paused starts parked.
	kernelPaused atomic.Bool // entries stay out of the kernel (kernel.go)

	pauseMu  sync.Mutex
	paused   bool          // Pause was called and Resume not since
	resumed  chan struct{} // closed by Resume; nil: not paused
	settled  bool          // and every loop has parked: descriptors may be exported
	pauseGen uint64        // counts Pauses, so a late one does not settle after a Resume

	// clock is the rate limits' time: since the relay was made, on the
	// monotonic clock; unit tests stop it.
	clock func() time.Duration
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
	rl := &Relay{
		opts: opts, live: make(map[liveKey]*Conn), held: make(map[liveKey]*held),
		tcp:    make(map[liveKey]*tcpRelay),
		routes: make(map[*bindings.Route]*opened),
		closed: make(chan struct{}), servers: make(map[netaddr.FiveTuple]serverID),
		clock: sinceNow(),
	}
	if opts.Kernel != nil {
		opts.Counters.SetSettle(rl.Settle)
	}
	return rl
}

// sinceNow returns a clock that reads the time passed since it was made.
func sinceNow() func() time.Duration {
	epoch := time.Now()
	return func() time.Duration { return time.Since(epoch) }
}

// Close releases every held reservation and stops the downlink loops (the
// server is stopping; its allocations are closed already).
func (rl *Relay) Close() {
	rl.loopsOnce.Do(func() {}) // no loop starts after this
	rl.closeOnce.Do(func() {
		close(rl.closed)
	})
	for _, d := range rl.loops {
		d.close()
	}
	rl.ReleaseHeld(nil)
}

// Counters returns the traffic totals of every relay socket this relay made.
func (rl *Relay) Counters() *traffic.Counters { return rl.opts.Counters }

// Validate reports options no allocation could be served with.
func (rl *Relay) Validate() error {
	switch {
	case rl.opts.IPv4 == nil && rl.opts.IPv6 == nil:
		return fmt.Errorf("validate relay: %w", ErrNoAddressForFamily)
	case rl.opts.MinPort < 1 || rl.opts.MaxPort > 65535 || rl.opts.MinPort > rl.opts.MaxPort:
		return fmt.Errorf("validate relay: bad port range %d-%d", rl.opts.MinPort, rl.opts.MaxPort)
	}
	return nil
}

// Serves reports whether relay sockets of the family (v6 or not) can be made.
func (rl *Relay) Serves(v6 bool) bool {
	if v6 {
		return rl.opts.IPv6 != nil
	}
	return rl.opts.IPv4 != nil
}
