package server

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pion/turn/v5"

	"github.com/turnd/turnd/internal/auth"
	"github.com/turnd/turnd/internal/edge"
	"github.com/turnd/turnd/internal/gate"
	"github.com/turnd/turnd/internal/loglimit"
	"github.com/turnd/turnd/internal/relay"
	"github.com/turnd/turnd/internal/traffic"
	"github.com/turnd/turnd/pkg/allocation"
	"github.com/turnd/turnd/pkg/config"
	"github.com/turnd/turnd/pkg/peerfilter"
)

// Options build a Server.
type Options struct {
	Config config.Config
	Logger *slog.Logger
	// Observer receives events for metrics; nil means none.
	Observer Observer
	// Accepting reports whether new allocations are taken; the drain owns
	// the answer. nil means always.
	Accepting func() bool
	// Registry is the allocation book the server keeps; nil makes a new one.
	// The caller passes its own when something (the drain) must watch it
	// before the server exists.
	Registry *allocation.Registry
	// Traffic receives relayed traffic totals; nil makes new counters.
	Traffic *traffic.Counters
	// DrainChanged receives after every change of the drain's status; the
	// server resolves the names in drain.alternate_servers when Accepting
	// turns false, and again every AlternatesRefresh while it stays so.
	// nil: names are never resolved (a drain answers 486).
	DrainChanged <-chan struct{}
	// Resolver looks names up; nil means net.DefaultResolver.
	Resolver Resolver
	// AlternatesRefresh is how often names are resolved again while
	// draining; 0 means 10s.
	AlternatesRefresh time.Duration
	// AllocateRateClock is the clock of limits.user_allocate_rate; nil
	// means time.Now.
	AllocateRateClock func() time.Time
}

// Server is a running TURN service. Create it with New; stop it with Close.
type Server struct {
	log       *slog.Logger
	obs       Observer
	accepting func() bool

	cfg      atomic.Pointer[config.Config]
	creds    atomic.Pointer[auth.Store]
	peers    atomic.Pointer[peerfilter.Filter]
	cert     atomic.Pointer[tls.Certificate]
	registry *allocation.Registry
	gate     *gate.Gate
	edge     *edge.Edge
	relay    *relay.Relay
	turn     *turn.Server

	// sockets are the client-facing sockets, bound by the edge.
	sockets *edge.Sockets

	// logRate bounds the log lines a client or a peer can cause.
	logRate *lineLimits
	own     ownAddrs
	alts    *alternates

	shutdownReason atomic.Pointer[string] // see SetShutdownReason
	load           throughput             // for limits.total_bps
	userRates      userRates              // for limits.user_total_bps
	users          *userTraffic           // for http.metrics_users

	loops     *loopWatch
	closeOnce sync.Once
	closed    chan struct{}
}

// New binds every listening socket and starts serving. A socket that cannot
// be bound (address in use, bad certificate) fails New with nothing left open.
func New(opts Options) (*Server, error) {
	cfg := opts.Config
	s := &Server{
		log:       opts.Logger,
		obs:       opts.Observer,
		accepting: opts.Accepting,
		registry:  opts.Registry,
		logRate:   newLineLimits(),
		loops:     newLoopWatch(),
		closed:    make(chan struct{}),
		users:     newUserTraffic(cfg.HTTP.MetricsUsers),
	}
	if s.registry == nil {
		s.registry = allocation.NewRegistry(AllocationLimits(cfg))
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.obs == nil {
		s.obs = nopObserver{}
	}
	if s.accepting == nil {
		s.accepting = func() bool { return true }
	}
	s.alts = newAlternates(opts.Resolver, s.own.contains, s.log, opts.AlternatesRefresh)
	if s.alts.resolver == nil {
		s.alts.resolver = net.DefaultResolver
	}
	if s.alts.refresh <= 0 {
		s.alts.refresh = defaultAlternatesRefresh
	}
	if err := s.apply(cfg); err != nil {
		return nil, err
	}
	ropts, err := relayOptions(cfg)
	if err != nil {
		return nil, err
	}
	ropts.Counters = opts.Traffic
	ropts.Forbidden = s.forbidden
	ropts.Panicked = func(v any) { s.recovered("relay downlink loop", v) }
	s.relay = relay.New(ropts)
	s.gate = gate.New(s.policy(cfg), gate.Hooks{
		Accepting:  s.accepting,
		Redirected: func(string, *net.UDPAddr) { s.obs.AllocationRejected(RejectRedirected) },
		TCPRefused: func(string) { s.obs.AllocationRejected(RejectTCPDisabled) },
		ReservationRefused: func(user string) {
			s.obs.AllocationRejected(RejectQuota)
			if held, ok := s.allow(s.logRate.reservations, slog.LevelInfo); ok {
				s.log.Info("allocation refused: too many port reservations", loglimit.Args(held, "user", user)...)
			}
		},
		AllocateRateLimited: func(user string) {
			s.obs.AllocationRejected(RejectRate)
			if held, ok := s.allow(s.logRate.allocateRate, slog.LevelInfo); ok {
				s.log.Info("allocation refused: allocate rate", loglimit.Args(held, "user", user)...)
			}
		},
		PeerRefused: func(user string, peer net.IP) {
			s.obs.PermissionRejected(RejectPeerDenied)
			if held, ok := s.allow(s.logRate.peerRefused, slog.LevelInfo); ok {
				s.log.Info("peer refused", loglimit.Args(held, "user", user, "peer", peer)...)
			}
		},
		CapacityRefused: func(user string) {
			s.obs.PermissionRejected(RejectBindingsCapacity)
			if held, ok := s.allow(s.logRate.capacity, slog.LevelInfo); ok {
				s.log.Info("permission, channel or connect refused: allocation at its cap", loglimit.Args(held, "user", user)...)
			}
		},
		RateLimited:    func(net.Addr) { s.obs.RequestDropped(DropRateLimited) },
		BadFingerprint: func(net.Addr) { s.obs.RequestDropped(DropBadFingerprint) },
		// The response carrying the grant is written after pion's created
		// event, so the registry already holds the allocation it extends.
		Granted: func(client, server net.Addr, lifetime time.Duration) {
			s.registry.Extend(client, server, time.Now().Add(lifetime))
		},
		Releasing: func(client, server net.Addr) { s.registry.MarkEnding(client, server, EndReleased) },
		Now:       opts.AllocateRateClock,
	})
	s.edge = edge.New(s.gate, s.panicked)
	if err := s.bind(cfg); err != nil {
		return nil, err
	}
	for _, a := range append(append(s.UDPAddrs(), s.TCPAddrs()...), s.TLSAddrs()...) {
		s.own.add(a)
	}
	// Only now are turnd's own addresses known, which the alternates leave out.
	s.alts.republish()
	if err := s.startTURN(cfg); err != nil {
		_ = s.sockets.Close()
		return nil, err
	}
	if opts.DrainChanged != nil {
		go s.alts.run(s.accepting, opts.DrainChanged, s.closed)
	}
	return s, nil
}

// startTURN runs pion behind the edge: one allocation table per UDP socket
// (pion's design) and one per stream listener.
func (s *Server) startTURN(cfg config.Config) error {
	var pcs []turn.PacketConnConfig
	for _, c := range s.sockets.UDP {
		// The hint carries the gate's port request for the packet this
		// socket is handling to this socket's relay generator (edge.PortHint).
		hint := new(edge.PortHint)
		conn, err := s.edge.PacketConn(c, hint, s.relay.RelayFor(c))
		if err != nil {
			return err
		}
		pcs = append(pcs, turn.PacketConnConfig{
			PacketConn:            watchedPacketConn{PacketConn: conn, w: s.loops},
			RelayAddressGenerator: s.relayGenerator(c, hint),
			PermissionHandler:     s.permit,
		})
	}
	var lcs []turn.ListenerConfig
	for i, ln := range append(append([]net.Listener(nil), s.sockets.TCP...), s.sockets.TLS...) {
		gen := s.relayGenerator(nil, nil) // TLS: pion's read loop writes through crypto/tls
		if i < len(s.sockets.TCP) {
			gen = s.streamGenerator()
		}
		lcs = append(lcs, turn.ListenerConfig{
			Listener:              watchedListener{Listener: s.edge.Listener(ln, edge.HandshakeTimeout, s.streamFastPath), w: s.loops},
			RelayAddressGenerator: gen,
			PermissionHandler:     s.permit,
		})
	}
	t, err := turn.NewServer(turn.ServerConfig{
		PacketConnConfigs:  pcs,
		ListenerConfigs:    lcs,
		LoggerFactory:      pionLoggers{log: s.log, kinds: s.logRate.pion},
		Realm:              cfg.Realm,
		AuthHandler:        s.authenticate,
		QuotaHandler:       s.admit,
		EventHandler:       s.events(),
		ChannelBindTimeout: cfg.Limits.ChannelLifetime,
		PermissionTimeout:  cfg.Limits.PermissionLifetime,
		AllocationLifetime: defaultLifetime(cfg),
	})
	if err != nil {
		return fmt.Errorf("start turn server: %w", err)
	}
	s.turn = t
	return nil
}

// Registry returns the live allocation registry (what the drain waits on).
func (s *Server) Registry() *allocation.Registry { return s.registry }

// UDPAddrs returns the bound UDP addresses, one per SO_REUSEPORT group.
func (s *Server) UDPAddrs() []net.Addr { return s.sockets.UDPAddrs() }

// TCPAddrs returns the bound TCP listener addresses.
func (s *Server) TCPAddrs() []net.Addr { return s.sockets.TCPAddrs() }

// TLSAddrs returns the bound TLS listener addresses.
func (s *Server) TLSAddrs() []net.Addr { return s.sockets.TLSAddrs() }

// streamFastPath is the relay's fast path for a TCP or TLS connection whose
// local address is local.
func (s *Server) streamFastPath(local net.Addr) edge.FastPath { return s.relay.RelayStreamFor(local) }

// answerGrace bounds how long Close waits for pion to answer the requests
// it is handling: microseconds, unless a client's connection stopped taking
// bytes and the answer's write blocks.
const answerGrace = 500 * time.Millisecond

// answerPending lets pion answer the requests it is handling before the
// sockets close, for at most answerGrace.
func (s *Server) answerPending() {
	pending, answered := s.edge.Quiesce()
	if pending == 0 {
		return
	}
	s.log.Debug("closing: answering requests in flight", "requests", pending)
	t := time.NewTimer(answerGrace)
	defer t.Stop()
	select {
	case <-answered:
	case <-t.C:
		s.log.Warn("closing with requests unanswered", "waited", answerGrace)
	}
}

// Done is closed once Close has run.
func (s *Server) Done() <-chan struct{} { return s.closed }

// Failed delivers the error of the first UDP socket or TCP/TLS listener
// that stopped serving before Close: the server no longer answers there, so
// the process should stop rather than look healthy.
func (s *Server) Failed() <-chan error { return s.loops.failed }

// Close stops serving and ends every allocation at once. The drain calls it
// only when it is over (no allocations left, or its deadline passed).
// Requests pion is handling are answered first, for at most answerGrace:
// the Refresh with lifetime 0 that ended a drain gets its 200.
func (s *Server) Close() error {
	var err error
	s.closeOnce.Do(func() {
		// Before any socket closes: the read errors that follow are ours.
		s.loops.closing.Store(true)
		s.answerPending()
		s.registry.MarkAllEnding(s.shutdownReasonOr(EndShutdown))
		err = s.turn.Close()
		if errors.Is(err, net.ErrClosed) {
			err = nil
		}
		s.recordShutdown()
		s.relay.Close()
		// pion closed the sockets and listeners, not what they accepted nor
		// the address locks.
		_ = s.sockets.Close()
		close(s.closed)
	})
	if err != nil {
		return fmt.Errorf("close turn server: %w", err)
	}
	return nil
}
