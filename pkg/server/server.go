package server

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/turnd/turnd/internal/auth"
	"github.com/turnd/turnd/internal/bindings"
	"github.com/turnd/turnd/internal/edge"
	"github.com/turnd/turnd/internal/relay"
	"github.com/turnd/turnd/internal/traffic"
	"github.com/turnd/turnd/pkg/allocation"
	"github.com/turnd/turnd/pkg/config"
	"github.com/turnd/turnd/pkg/peerfilter"
	"github.com/turnd/turnd/pkg/turn"
)

// Options build a Server.
type Options struct {
	Config config.Config
	Logger *slog.Logger
	// Observer receives events for metrics; nil means none.
	Observer Observer
	// Table is the allocation table the server serves from; nil makes a new
	// one. The caller passes its own when something (the drain) must count
	// it and stop its admissions before the server exists.
	Table *Table
	// Traffic receives relayed traffic totals; nil makes new counters.
	Traffic *traffic.Counters
	// DrainChanged receives after every change of the drain's status; the
	// server resolves the names in drain.alternate_servers when the table
	// stops admitting, and again every AlternatesRefresh while it stays so.
	// nil: names are never resolved (a drain answers 486).
	DrainChanged <-chan struct{}
	// Resolver looks names up; nil means net.DefaultResolver.
	Resolver Resolver
	// AlternatesRefresh is how often names are resolved again while
	// draining; 0 means 10s.
	AlternatesRefresh time.Duration
	// AllocateRateClock is the clock of the handlers (limits.user_allocate_rate,
	// nonces, lifetimes); nil means time.Now.
	AllocateRateClock func() time.Time
	// Clock drives the table's expiries; nil means the system clock.
	Clock allocation.Clock
	// Inherit, if not nil, is a predecessor's state and descriptors: New
	// serves them instead of binding, and reads nothing before Start.
	Inherit *Inherit

	// relays, if not nil, wraps the relay the handlers open routes on (a
	// test's hold; export_test.go sets it).
	relays func(turn.Relays) turn.Relays
}

// Server is a running TURN service. Create it with New; stop it with Close.
type Server struct {
	log *slog.Logger
	obs Observer

	cfg    atomic.Pointer[config.Config]
	creds  atomic.Pointer[auth.Store]
	peers  atomic.Pointer[peerfilter.Filter]
	cert   atomic.Pointer[tls.Certificate]
	table  *Table
	nonces *auth.Nonces
	turn   *turn.Handler
	edge   *edge.Edge
	relay  *relay.Relay
	kernel kernelPath // relay.offload (offload.go)
	fleet  *fleetNode // fleet.* (fleet.go); nil: a single node
	now    func() time.Time

	// sockets are the client-facing sockets, bound by the edge.
	sockets *edge.Sockets

	// logRate bounds the log lines a client or a peer can cause.
	logRate *lineLimits
	own     ownAddrs
	alts    *alternates

	shutdownReason atomic.Pointer[allocation.EndReason] // see SetShutdownReason
	load           throughput                           // for limits.total_bps
	userRates      userRates                            // for limits.user_total_bps
	rated          allocRates                           // which allocations hold a userRates share
	users          *userTraffic                         // for http.metrics_users

	clock     allocation.Clock
	clockStop context.CancelFunc // the table's clock; nil while stopped
	clockDone chan struct{}
	startOnce sync.Once
	started   atomic.Bool
	freeze    sync.Mutex // held from Freeze to Commit or Thaw; Close, Reload and Disconnect wait
	// startStreams starts the readers of the connections a predecessor
	// passed; nil: none.
	startStreams func()
	// inheritedRelay: the relay was paused until Start (a predecessor's).
	inheritedRelay bool

	serving   sync.WaitGroup // the serve loops
	closeOnce sync.Once
	closed    chan struct{}
}

// nonceLife is how long a NONCE stays fresh before a 438 asks for another:
// 0, auth.DefaultNonceLifetime.
const nonceLife = 0

// New binds every listening socket and starts serving. A socket that cannot
// be bound (address in use, bad certificate) fails New with nothing left open.
func New(opts Options) (*Server, error) {
	cfg := opts.Config
	s := &Server{
		log:     opts.Logger,
		obs:     opts.Observer,
		table:   opts.Table,
		now:     opts.AllocateRateClock,
		logRate: newLineLimits(),
		closed:  make(chan struct{}),
		users:   newUserTraffic(cfg.HTTP.MetricsUsers),
	}
	if s.table == nil {
		s.table = NewTable(cfg)
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.obs == nil {
		s.obs = nopObserver{}
	}
	if s.now == nil {
		s.now = time.Now
	}
	s.alts = newAlternates(opts.Resolver, s.own.contains, s.log, opts.AlternatesRefresh)
	if s.alts.resolver == nil {
		s.alts.resolver = net.DefaultResolver
	}
	if s.alts.refresh <= 0 {
		s.alts.refresh = defaultAlternatesRefresh
	}
	var in *inherited
	var secret []byte // nil: a fresh one
	if opts.Inherit != nil {
		var err error
		if in, err = decodeInherit(opts.Inherit); err != nil {
			return nil, fmt.Errorf("take over: %w", err)
		}
		secret = in.snap.NonceSecret // the predecessor's nonces stay valid
	}
	nonces, err := newNonces(secret)
	if err != nil {
		return nil, err
	}
	s.nonces = nonces
	if cfg.FleetOn() {
		// Before the first apply: the credentials refuse the fleet's revocations too.
		if s.fleet, err = newFleetNode(s, cfg); err != nil {
			return nil, err
		}
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
	ropts.PeerArrived = s.peerArrived
	if err := s.openKernel(cfg); err != nil {
		return nil, err
	}
	if s.kernel.path != nil {
		ropts.Kernel, ropts.KernelFailed = s.kernel.path, s.kernelFailed
	}
	s.relay = relay.New(ropts)
	var routes turn.Relays = s.relay.Routes()
	if opts.relays != nil {
		routes = opts.relays(routes)
	}
	topts := turn.Options{Table: s.table.Table, Relays: routes, Nonces: s.nonces, Events: events{s}, Now: s.now}
	if s.fleet != nil {
		topts.Admission = s.fleet
	}
	s.turn = turn.New(topts, s.policy(cfg))
	s.table.handler.Store(s.turn)
	s.edge = edge.New(s.panicked)
	s.edge.SetIdleTimeout(cfg.Limits.IdleConnectionTimeout)
	if in != nil {
		// Its loops start parked: the relay sockets and RFC 6062 listeners
		// are read only from Start, after the predecessor let go.
		_ = s.relay.Pause(context.Background()) // no loop runs yet: it returns at once
		s.inheritedRelay = true
		if err := s.inherit(in); err != nil {
			s.abandon()
			return nil, fmt.Errorf("take over: %w", err)
		}
		if s.fleet != nil {
			// Each allocation holds a fleet count; the predecessor's move with it.
			for _, a := range s.table.Allocations() {
				s.fleet.Hold(a.User)
			}
		}
	} else if err := s.bind(cfg); err != nil {
		s.relay.Close()
		s.closeKernel()
		return nil, err
	}
	for _, a := range append(append(s.UDPAddrs(), s.TCPAddrs()...), s.TLSAddrs()...) {
		s.own.add(a)
	}
	// Only now are turnd's own addresses known, which the alternates leave out.
	s.alts.republish()
	s.clock = opts.Clock
	if s.clock == nil && opts.AllocateRateClock != nil {
		s.clock = handlerClock{now: s.now} // deadlines are set on the handlers' clock
	}
	if s.clock == nil {
		s.clock = allocation.Wall{}
	}
	if opts.DrainChanged != nil {
		changed := opts.DrainChanged
		if s.fleet != nil {
			changed = tee(changed, s.fleet.drainChanged, s.closed)
		}
		go s.alts.run(s.table.Admitting, changed, s.closed)
	}
	if in == nil {
		if s.fleet != nil {
			// Before serving: the first Allocate already counts in the fleet.
			if err := s.fleet.open(); err != nil {
				_ = s.Close()
				return nil, err
			}
		}
		s.Start()
	}
	return s, nil
}

// newNonces makes the NONCE issuer: with a predecessor's secret, its
// nonces stay valid.
func newNonces(secret []byte) (*auth.Nonces, error) {
	n, err := auth.NewNonces(secret, nonceLife)
	if err != nil {
		return nil, fmt.Errorf("make nonces: %w", err)
	}
	return n, nil
}

// Start starts reading every socket and the table's clock. New calls it
// unless the server takes over from a predecessor, which must have
// stopped for good first; later calls do nothing.
func (s *Server) Start() {
	s.startOnce.Do(func() {
		s.started.Store(true)
		if s.fleet != nil && s.inheritedRelay {
			s.fleet.openLater() // a successor serves at once; its counts wait for the client
		}
		s.startClock()
		if s.inheritedRelay {
			s.relay.Resume()
		}
		s.serve()
		if s.startStreams != nil {
			s.startStreams()
		}
	})
}

// startClock runs the table's expiries until stopClock.
func (s *Server) startClock() {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	s.clockStop, s.clockDone = cancel, done
	go func() {
		defer close(done)
		s.table.Run(ctx, s.clock)
	}()
}

// stopClock stops the table's expiries and waits for the one running.
func (s *Server) stopClock() {
	if s.clockStop == nil {
		return
	}
	s.clockStop()
	<-s.clockDone
	s.clockStop = nil
}

// peerArrived is the relay's Options.PeerArrived: the handler's, once it
// exists (no RFC 6062 route opens before).
func (s *Server) peerArrived(r *bindings.Route, peer netip.AddrPort) (uint32, bool) {
	return s.turn.PeerArrived(r, peer)
}

// serve starts a loop per UDP socket and per stream listener.
func (s *Server) serve() {
	for _, sock := range s.sockets.UDP {
		s.serving.Add(1)
		go func() {
			defer s.serving.Done()
			_ = s.edge.ServeUDP(sock, s.relay.RelayFor(sock), s.turn.Serve) // a failure is in Failed
		}()
	}
	streams := s.streamOptions()
	for _, ln := range append(append([]net.Listener(nil), s.sockets.TCP...), s.sockets.TLS...) {
		s.serving.Add(1)
		go func() {
			defer s.serving.Done()
			_ = s.edge.ServeStreams(ln, streams)
		}()
	}
}

// streamOptions are how the edge serves TCP and TLS connections.
func (s *Server) streamOptions() edge.StreamOptions {
	return edge.StreamOptions{
		Handler:  s.turn.Serve,
		FastPath: s.streamFastPath,
		Reactor: func() edge.Reactor {
			l, err := s.relay.NextLoop()
			if err != nil {
				return nil // the connection's own goroutine reads it
			}
			return l
		},
		HandshakeTimeout: edge.HandshakeTimeout,
		Closed:           s.streamClosed,
	}
}

// handlerClock is the table's clock when only the handlers' is given.
type handlerClock struct{ now func() time.Time }

func (c handlerClock) Now() time.Time                         { return c.now() }
func (c handlerClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

// streamClosed ends the allocation a TCP or TLS client's connection
// carried: it lives as long as its connection.
func (s *Server) streamClosed(c *bindings.Client) {
	if a, ok := s.table.Get(c.Tuple); ok && a.Route.Client.Stream == c.Stream {
		s.table.End(a, allocation.EndConnectionClosed)
	}
}

// Table returns the allocation table (what the drain waits on).
func (s *Server) Table() *Table { return s.table }

// UDPAddrs returns the bound UDP addresses, one per SO_REUSEPORT group.
func (s *Server) UDPAddrs() []net.Addr { return s.sockets.UDPAddrs() }

// TCPAddrs returns the bound TCP listener addresses.
func (s *Server) TCPAddrs() []net.Addr { return s.sockets.TCPAddrs() }

// TLSAddrs returns the bound TLS listener addresses.
func (s *Server) TLSAddrs() []net.Addr { return s.sockets.TLSAddrs() }

// streamFastPath is the relay's fast path for a TCP or TLS connection whose
// local address is local.
func (s *Server) streamFastPath(local net.Addr) edge.FastPath { return s.relay.RelayStreamFor(local) }

// answerGrace bounds how long Close waits for the answers the edge has
// queued: microseconds, unless a client's connection stopped taking bytes.
const answerGrace = 500 * time.Millisecond

// awaitLoops waits for the serve loops to return, for at most answerGrace:
// a handler that never returns must not hold Close forever.
func (s *Server) awaitLoops() {
	done := make(chan struct{})
	go func() {
		s.serving.Wait()
		close(done)
	}()
	t := time.NewTimer(answerGrace)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	}
}

// Done is closed once Close has run.
func (s *Server) Done() <-chan struct{} { return s.closed }

// Failed delivers the error of the first UDP socket or TCP/TLS listener
// that stopped serving before Close: the server no longer answers there, so
// the process should stop rather than look healthy.
func (s *Server) Failed() <-chan error { return s.edge.Failed() }

// Close stops serving and ends every allocation at once. The drain calls it
// only when it is over (no allocations left, or its deadline passed).
// The answers the edge has queued are written first, for at most
// answerGrace: the Refresh with lifetime 0 that ended a drain gets its 200.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		s.freeze.Lock() // a hand-over in progress ends first
		defer s.freeze.Unlock()
		if !s.started.Load() {
			s.abandon()
			close(s.closed)
			return
		}
		s.table.StopAdmitting()
		s.log.Debug("closing: answering requests in flight")
		ctx, cancel := context.WithTimeout(context.Background(), answerGrace)
		// Allocates the fleet is asked about are answered, or time out, first.
		_ = s.turn.PauseAdmissions(ctx)
		if err := s.edge.Stop(ctx); err != nil {
			s.log.Warn("closing with requests unanswered", "waited", answerGrace)
		}
		cancel()
		why := s.shutdownReasonOr(allocation.EndShutdown)
		// Usage records through the table's Ended hook, counters final
		// enough: no reader serves anymore.
		s.table.EndWhere(func(*allocation.Allocation) bool { return true }, why)
		if s.fleet != nil {
			s.fleet.close() // after the usage records of the allocations just ended
		}
		s.relay.Close()
		s.closeKernel()
		s.stopClock()
		_ = s.sockets.Close()
		s.awaitLoops()
		close(s.closed)
	})
	return nil
}

// abandon closes a server that never served: what it holds are
// duplicates of a predecessor's descriptors, and its allocations stay the
// predecessor's (EndMoved: no usage record here).
func (s *Server) abandon() {
	s.table.StopAdmitting()
	s.table.EndWhere(func(*allocation.Allocation) bool { return true }, allocation.EndMoved)
	s.relay.Close()
	s.closeKernel()
	if s.sockets != nil {
		_ = s.sockets.Close()
	}
}
