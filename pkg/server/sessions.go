package server

import (
	"github.com/turnd/turnd/internal/traffic"
	"github.com/turnd/turnd/pkg/allocation"
)

// Sessions returns the live allocations of user (every user if empty),
// oldest first; Usage reads each one's traffic so far.
func (s *Server) Sessions(user string) []allocation.Info { return s.registry.List(user) }

// Usage returns the traffic so far of the allocation whose relay is
// info.Relay.
func (s *Server) Usage(info allocation.Info) traffic.Usage {
	u, _ := s.relay.Usage(info.Relay)
	return u
}

// Disconnect ends the live allocations of user, or the one whose relay
// address is id (the session ID /sessions lists), and returns how many it
// ended. by says who asked, for the log. Each ends as pion deletes it: the
// client's next request gets 437, and its usage record says disconnected.
func (s *Server) Disconnect(user, id, by string) int {
	n := 0
	for _, info := range s.registry.List(user) {
		if id != "" && addrText(info.Relay) != id {
			continue
		}
		if !s.registry.MarkEnding(info.Client, info.Server, EndDisconnected) {
			continue // ended meanwhile
		}
		if err := s.relay.Disconnect(info.Relay); err != nil {
			s.log.Warn("disconnect failed", "user", info.User, "relay", addrText(info.Relay), "err", err)
			continue
		}
		n++
	}
	s.log.Info("disconnect requested", "by", by, "user", user, "id", id, "allocations_ended", n)
	return n
}
