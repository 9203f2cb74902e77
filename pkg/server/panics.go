package server

import (
	"fmt"
	"log/slog"

	"github.com/turnd/turnd/internal/loglimit"
)

// panicked reports a panic recovered while handling one packet.
func (s *Server) panicked(v any) { s.recovered("packet", v) }

// catch recovers a panic in one of turnd's callbacks that run on the
// edge's readers and the relay's loops (the handlers' Events): a bug there
// must cost one event, not the request nor every call. The callback
// returns its zero values; use it as `defer s.catch("where")`.
func (s *Server) catch(where string) {
	if v := recover(); v != nil {
		s.recovered(where, v)
	}
}

// recovered counts a recovered panic and logs it, at most once a second:
// one hostile packet repeated at line rate must not turn into a log flood.
func (s *Server) recovered(where string, v any) {
	s.obs.PanicRecovered()
	if held, ok := s.allow(s.logRate.panics, slog.LevelError); ok {
		s.log.Error("recovered from a panic; that request or packet was dropped, serving goes on",
			loglimit.Args(held, "in", where, "panic", fmt.Sprint(v))...)
	}
}
