package server

import "github.com/turnd/turnd/pkg/allocation"

// Why an allocation ended, as its usage record says (allocation.EndReason's
// values).
var (
	EndReleased         = allocation.EndReleased.String()         // the client's Refresh with lifetime 0
	EndExpired          = allocation.EndExpired.String()          // its lifetime ran out without a refresh
	EndConnectionClosed = allocation.EndConnectionClosed.String() // a TCP or TLS client's connection ended
	EndDisconnected     = allocation.EndDisconnected.String()     // an operator ended it (Disconnect)
	EndDrainDeadline    = allocation.EndDrainDeadline.String()    // force-closed when the drain deadline passed
	EndShutdown         = allocation.EndShutdown.String()         // force-closed as the server stopped
)

// SetShutdownReason names why allocations still live when Close runs are
// closed (EndDrainDeadline when the drain gave up on them); EndShutdown
// otherwise.
func (s *Server) SetShutdownReason(reason string) {
	why := allocation.EndShutdown
	if reason == EndDrainDeadline {
		why = allocation.EndDrainDeadline
	}
	s.shutdownReason.Store(&why)
}

func (s *Server) shutdownReasonOr(def allocation.EndReason) allocation.EndReason {
	if r := s.shutdownReason.Load(); r != nil {
		return *r
	}
	return def
}
