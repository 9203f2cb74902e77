package server

import (
	"time"

	"github.com/turnd/turnd/internal/loglimit"
	"github.com/turnd/turnd/pkg/config"
	"github.com/turnd/turnd/pkg/turn"
)

// WrapRelays makes the server built with o open its routes through wrap's
// Relays.
func WrapRelays(o *Options, wrap func(turn.Relays) turn.Relays) { o.relays = wrap }

// Config returns the configuration in force.
func (s *Server) Config() config.Config { return *s.cfg.Load() }

// UDPSocketCount returns how many client-facing UDP sockets are bound, over
// every SO_REUSEPORT group.
func (s *Server) UDPSocketCount() int { return len(s.sockets.UDP) }

// SetLogClock makes the limits of the lines clients and peers can cause
// read now.
func (s *Server) SetLogClock(now func() time.Time) { s.logRate.clock.Store(&now) }

// LogLinesPerSecond is how many lines of one kind a client or a peer can
// cause in a second.
const LogLinesPerSecond = loglimit.PerSecond

// BreakUDPSocket closes the first client-facing UDP socket under pion's read
// loop, as a failing socket would end it.
func (s *Server) BreakUDPSocket() error { return s.sockets.UDP[0].Close() }

// BreakTCPListener closes the first TCP listener under pion's accept loop.
func (s *Server) BreakTCPListener() error { return s.sockets.TCP[0].Close() }
