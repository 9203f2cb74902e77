package server

import (
	"net"
	"slices"
	"time"

	"github.com/turnd/turnd/internal/traffic"
	"github.com/turnd/turnd/pkg/allocation"
)

// Why an allocation ended, as its usage record says.
const (
	EndReleased         = "released"          // the client's Refresh with lifetime 0
	EndExpired          = "expired"           // its lifetime ran out without a refresh
	EndConnectionClosed = "connection_closed" // a TCP or TLS client's connection ended
	EndDisconnected     = "disconnected"      // an operator ended it (Disconnect)
	EndDrainDeadline    = "drain_deadline"    // force-closed when the drain deadline passed
	EndShutdown         = "shutdown"          // force-closed as the server stopped
)

// endReason tells why pion deleted the allocation info (client src as pion
// reported it). A TCP or TLS client's connection ending is reported with
// the connection's own address object; a release or an expiry with the
// object the allocation was created with, or one made for the request.
func endReason(info allocation.Info, src net.Addr) string {
	switch {
	case info.Ending != "":
		return info.Ending
	case info.Transport != allocation.UDP && src != info.KeyedBy:
		return EndConnectionClosed
	}
	return EndExpired
}

// logUsage writes the allocation's usage record: one line with who used
// which relay, for how long, how much, and why it ended.
// Never limited: billing needs every record, and the allocation rate bounds them.
func (s *Server) logUsage(info allocation.Info, u traffic.Usage, reason string) {
	s.users.add(info.User, u) // for http.metrics_users
	s.log.Info("allocation deleted", "user", info.User, "client", addrText(info.Client),
		"transport", info.Transport.String(), "relay", addrText(info.Relay),
		"start", info.Created.UTC().Format(time.RFC3339Nano), "duration", time.Since(info.Created).Round(time.Millisecond),
		"to_peer_bytes", u.ToPeerBytes, "to_peer_packets", u.ToPeerPackets,
		"from_peer_bytes", u.FromPeerBytes, "from_peer_packets", u.FromPeerPackets,
		"permissions", u.Permissions, "channels", u.Channels, "rate_limited_packets", u.RateLimited,
		"no_permission_packets", u.NoPermission,
		"reason", reason, "allocations", s.registry.Count())
}

// copyAddr returns a copy of a client address that turnd may read at any
// time, unlike pion's own object (see allocation.Info.KeyedBy).
func copyAddr(a net.Addr) net.Addr {
	switch v := a.(type) {
	case *net.UDPAddr:
		return &net.UDPAddr{IP: slices.Clone(v.IP), Port: v.Port, Zone: v.Zone}
	case *net.TCPAddr:
		return &net.TCPAddr{IP: slices.Clone(v.IP), Port: v.Port, Zone: v.Zone}
	}
	return a
}

func addrText(a net.Addr) string {
	if a == nil {
		return ""
	}
	return a.String()
}

// SetShutdownReason names why allocations still live when Close runs are
// closed (EndDrainDeadline when the drain gave up on them); EndShutdown
// otherwise.
func (s *Server) SetShutdownReason(reason string) { s.shutdownReason.Store(&reason) }

func (s *Server) shutdownReasonOr(def string) string {
	if r := s.shutdownReason.Load(); r != nil {
		return *r
	}
	return def
}

// recordShutdown writes the usage records of the allocations Close ends
// that pion did not report deleted (it closes them without a report).
// Called after pion's sockets closed, so the totals are final, and before
// the relay generator forgets its sockets. Close marked them all ending
// first, so those pion did report say why too.
func (s *Server) recordShutdown() {
	for _, info := range s.registry.RemoveAll() {
		// Not Deleted: that would let pion's goroutines change the
		// client address objects they still read as they stop.
		u, _ := s.relay.Usage(info.Relay)
		s.logUsage(info, u, info.Ending)
	}
}
