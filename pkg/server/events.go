package server

import (
	"errors"
	"log/slog"
	"net/netip"
	"time"

	"github.com/turnd/turnd/internal/auth"
	"github.com/turnd/turnd/internal/loglimit"
	"github.com/turnd/turnd/internal/relay"
	"github.com/turnd/turnd/internal/traffic"
	"github.com/turnd/turnd/pkg/allocation"
	"github.com/turnd/turnd/pkg/turn"
)

// events is the handlers' turn.Events: metrics through the Observer, the
// log lines clients cause (rate-limited), usage records and per-user
// traffic. Called on request paths and from the table's hooks: nothing here
// blocks.
type events struct{ s *Server }

const methodAllocate = "Allocate"

// Refused counts and logs a refused request.
func (e events) Refused(method, reason, user string, client netip.AddrPort) {
	defer e.s.catch("events: Refused") // a bug here costs this one event, never the request
	s := e.s
	allocate := method == methodAllocate
	switch reason {
	case turn.RefusedAuth:
		s.warnTooLong(user, client)
		if !allocate {
			return
		}
		s.obs.AllocationRejected(RejectAuth)
		if held, ok := s.allow(s.logRate.badCredentials, slog.LevelInfo); ok {
			s.log.Info("allocation refused: bad credentials",
				loglimit.Args(held, "user", loglimit.Clip(user), "client", client.String())...)
		}
	case turn.RefusedDraining:
		s.obs.AllocationRejected(RejectDraining)
		if held, ok := s.allow(s.logRate.draining, slog.LevelInfo); ok {
			s.log.Info("allocation refused: draining", loglimit.Args(held, "user", user, "client", client.String())...)
		}
	case turn.RefusedRedirected:
		s.obs.AllocationRejected(RejectRedirected)
	case turn.RefusedFleetQuota, turn.RefusedFleetUnavailable:
		s.obs.AllocationRejected(reason) // the Observer's names are the handler's
		if held, ok := s.allow(s.logRate.quota, slog.LevelInfo); ok {
			s.log.Info("allocation refused", loglimit.Args(held, "user", user, "client", client.String(), "reason", reason)...)
		}
	case turn.RefusedTCPDisabled:
		s.obs.AllocationRejected(RejectTCPDisabled)
	case turn.RefusedBandwidth:
		s.obs.AllocationRejected(RejectBandwidth)
		if held, ok := s.allow(s.logRate.totalBPS, slog.LevelInfo); ok {
			s.log.Info("allocation refused: limits.total_bps reached",
				loglimit.Args(held, "user", user, "client", client.String())...)
		}
	case turn.RefusedRate:
		s.obs.AllocationRejected(RejectRate)
		if held, ok := s.allow(s.logRate.allocateRate, slog.LevelInfo); ok {
			s.log.Info("allocation refused: allocate rate", loglimit.Args(held, "user", user)...)
		}
	case turn.RefusedQuota:
		s.obs.AllocationRejected(RejectQuota)
		if held, ok := s.allow(s.logRate.quota, slog.LevelInfo); ok {
			s.log.Info("allocation refused", loglimit.Args(held, "user", user, "client", client.String(), "reason", "quota")...)
		}
	case turn.RefusedCapacity:
		if allocate {
			s.obs.AllocationRejected(RejectCapacity)
			return
		}
		s.obs.PermissionRejected(RejectBindingsCapacity)
		if held, ok := s.allow(s.logRate.capacity, slog.LevelInfo); ok {
			s.log.Info("permission, channel or connect refused: allocation at its cap", loglimit.Args(held, "user", user)...)
		}
	case turn.RefusedPeerDenied:
		s.obs.PermissionRejected(RejectPeerDenied)
		if held, ok := s.allow(s.logRate.peerRefused, slog.LevelInfo); ok {
			s.log.Info("peer refused", loglimit.Args(held, "user", user, "client", client.String())...)
		}
	}
}

// warnTooLong tells the operator why a REST credential fails when it
// expires further ahead than auth.max_rest_validity; it says nothing a
// client could not know (the expiry is in its username).
func (s *Server) warnTooLong(username string, client netip.AddrPort) {
	if _, _, err := s.creds.Load().Keys(username, s.cfg.Load().Realm); !errors.Is(err, auth.ErrTooLong) {
		return
	}
	if held, ok := s.allow(s.logRate.restTooLong, slog.LevelWarn); ok {
		s.log.Warn("REST credential expires further ahead than auth.max_rest_validity",
			loglimit.Args(held, "user", loglimit.Clip(username), "client", client.String())...)
	}
}

// Dropped counts a message dropped unanswered.
func (e events) Dropped(reason string) {
	defer e.s.catch("events: Dropped") // a bug here costs this one event, never the request
	switch reason {
	case turn.DropRateLimited, turn.DropBadFingerprint:
		e.s.obs.RequestDropped(reason)
	}
}

// ChannelBound writes the debug line of a channel bound.
func (e events) ChannelBound(a *allocation.Allocation, number uint16, peer netip.AddrPort) {
	defer e.s.catch("events: ChannelBound") // a bug here costs this one event, never the request
	s := e.s
	if held, ok := s.allow(s.logRate.channelBound, slog.LevelDebug); ok {
		s.log.Debug("channel bound", loglimit.Args(held, "client", a.Tuple.Client.String(), "relay", relayText(a),
			"peer", peer.String(), "channel", number)...)
	}
}

// Created holds a new allocation to the rates in force, counts it and
// logs it.
func (e events) Created(a *allocation.Allocation) {
	defer e.s.catch("events: Created") // a bug here costs this one event, never the request
	s := e.s
	s.holdRates(a)
	s.obs.AllocationCreated(a.Transport)
	// A record, not limited: the allocation rate (quotas, credentials) bounds it.
	s.log.Info("allocation created", "user", a.User, "client", a.Tuple.Client.String(), "transport", a.Transport.String(),
		"relay", relayText(a), "dont_fragment", a.DontFragment, "allocations", s.table.Count())
}

// holdRates holds an allocation created here, or taken over from a
// predecessor, to the rates in force.
func (s *Server) holdRates(a *allocation.Allocation) {
	// The user's shared rate is released in Ended, and taken before any
	// reload lists the allocation.
	var shared *relay.UserRate
	if s.rated.created(a, func() { shared = s.userRates.acquire(a.User, s.limits) }) {
		if err := s.limitNew(relayAddrOf(a), a.User, shared); err != nil {
			s.log.Warn("bandwidth limit not applied", "relay", relayText(a), "err", err)
		}
	}
}

// Ended writes the allocation's usage record, unless it moved to a
// successor, which writes it when the allocation ends there.
func (e events) Ended(a *allocation.Allocation, why allocation.EndReason, u traffic.Usage) {
	defer e.s.catch("events: Ended") // a bug here costs this one event, never the request
	s := e.s
	s.rated.ended(a, func() { s.userRates.release(a.User) })
	if why == allocation.EndMoved {
		return
	}
	s.logUsage(a, u, why.String())
	if s.fleet != nil {
		s.fleet.ended(a, u, why.String())
	}
}

// firstRelayed is the allocation's IPv4 relayed address, or its IPv6 one:
// its session ID, and where its rates are set (one per allocation).
func firstRelayed(a *allocation.Allocation) netip.AddrPort {
	all := a.RelayedAll()
	if all[0].IsValid() {
		return all[0]
	}
	return all[1]
}

// relayText is the allocation's relayed addresses, IPv4 first, as the log
// lines and the session ID name them.
func relayText(a *allocation.Allocation) string {
	all := a.RelayedAll()
	switch {
	case all[0].IsValid() && all[1].IsValid():
		return all[0].String() + "," + all[1].String()
	case all[0].IsValid():
		return all[0].String()
	case all[1].IsValid():
		return all[1].String()
	}
	return ""
}

// logUsage writes the allocation's usage record: one line with who used
// which relay, for how long, how much, and why it ended.
// Never limited: billing needs every record, and the allocation rate bounds them.
func (s *Server) logUsage(a *allocation.Allocation, u traffic.Usage, reason string) {
	s.users.add(a.User, u) // for http.metrics_users
	s.log.Info("allocation deleted", "user", a.User, "client", a.Tuple.Client.String(),
		"transport", a.Transport.String(), "relay", relayText(a),
		"start", a.Created.UTC().Format(time.RFC3339Nano), "duration", s.now().Sub(a.Created).Round(time.Millisecond),
		"to_peer_bytes", u.ToPeerBytes, "to_peer_packets", u.ToPeerPackets,
		"from_peer_bytes", u.FromPeerBytes, "from_peer_packets", u.FromPeerPackets,
		"permissions", u.Permissions, "channels", u.Channels, "rate_limited_packets", u.RateLimited,
		"no_permission_packets", u.NoPermission,
		"reason", reason, "allocations", s.table.Count())
}
