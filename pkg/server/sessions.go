package server

import (
	"github.com/turnd/turnd/internal/netaddr"
	"github.com/turnd/turnd/internal/traffic"
	"github.com/turnd/turnd/pkg/allocation"
)

// Sessions returns the live allocations of user (every user if empty),
// oldest first, each with its traffic so far.
func (s *Server) Sessions(user string) []allocation.Info {
	s.relay.Settle()
	return s.table.List(user)
}

// Usage returns the traffic so far of the allocation info describes: read
// now while it lives, else as Sessions read it.
func (s *Server) Usage(info allocation.Info) traffic.Usage {
	s.relay.Settle()
	if a, ok := s.table.Get(info.Tuple); ok && a.Created.Equal(info.Created) {
		return a.Usage()
	}
	return info.Usage
}

// Disconnect ends the live allocations of user, or the one whose first
// relayed address is id (the session ID /sessions lists), and returns how
// many it ended. by says who asked, for the log. The client's next request
// gets 437, and the usage record says disconnected.
func (s *Server) Disconnect(user, id, by string) int {
	s.freeze.Lock() // not while a successor is being handed the table
	defer s.freeze.Unlock()
	return s.disconnect(user, id, by)
}

// disconnect is Disconnect; s.freeze is held.
func (s *Server) disconnect(user, id, by string) int {
	// Chosen from the list: EndWhere's match runs under the table's lock,
	// where an allocation's relayed addresses cannot be read.
	chosen := make(map[netaddr.FiveTuple]bool)
	for _, info := range s.table.List(user) {
		if id == "" || (info.Relay != nil && info.Relay.String() == id) {
			chosen[info.Tuple] = true
		}
	}
	n := s.table.EndWhere(func(a *allocation.Allocation) bool { return chosen[a.Tuple] }, allocation.EndDisconnected)
	s.log.Info("disconnect requested", "by", by, "user", user, "id", id, "allocations_ended", n)
	return n
}
