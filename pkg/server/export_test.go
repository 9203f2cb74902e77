package server

import (
	"time"

	"github.com/turnd/turnd/pkg/config"
)

// Config returns the configuration in force.
func (s *Server) Config() config.Config { return *s.cfg.Load() }

// UDPSocketCount returns how many client-facing UDP sockets are bound, over
// every SO_REUSEPORT group.
func (s *Server) UDPSocketCount() int { return len(s.sockets.UDP) }

// SetAuthLogClock makes the failed-authentication log limit read now.
func (s *Server) SetAuthLogClock(now func() time.Time) {
	s.authLog.mu.Lock()
	s.authLog.now = now
	s.authLog.mu.Unlock()
}

// AuthLogPerSecond is the failed-authentication log limit.
const AuthLogPerSecond = authLogPerSecond

// BreakUDPSocket closes the first client-facing UDP socket under pion's read
// loop, as a failing socket would end it.
func (s *Server) BreakUDPSocket() error { return s.sockets.UDP[0].Close() }

// BreakTCPListener closes the first TCP listener under pion's accept loop.
func (s *Server) BreakTCPListener() error { return s.sockets.TCP[0].Close() }
