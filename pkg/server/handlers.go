package server

import (
	"errors"
	"log/slog"
	"net"
	"time"

	"github.com/pion/stun/v4"
	"github.com/pion/turn/v5"

	"github.com/turnd/turnd/internal/auth"
	"github.com/turnd/turnd/internal/edge"
	"github.com/turnd/turnd/internal/loglimit"
	"github.com/turnd/turnd/internal/netaddr"
	"github.com/turnd/turnd/pkg/allocation"
)

// authenticate is pion's AuthHandler: the user's long-term key. With several
// REST secrets the gate has already found which one the client used.
//
// A username the store refuses (unknown, expired, another realm) gets a
// decoy key instead of a refusal: pion then checks MESSAGE-INTEGRITY and
// fails exactly as for a wrong password, with the same 401, the same work,
// the same OnAuth event and log line, so user names cannot be enumerated.
// A failing request was charged to its client's rate limit by the gate,
// which could not verify it either.
func (s *Server) authenticate(ra *turn.RequestAttributes) (string, []byte, bool) {
	defer s.catch("auth handler") // refuses: 401
	creds := s.creds.Load()
	userID, keys, err := creds.Keys(ra.Username, ra.Realm)
	if err != nil {
		if errors.Is(err, auth.ErrTooLong) {
			// Says nothing a client could not know (the expiry is in its
			// username), and tells the operator why a credential fails.
			if held, ok := s.allow(s.logRate.restTooLong, slog.LevelWarn); ok {
				s.log.Warn("REST credential expires further ahead than auth.max_rest_validity",
					loglimit.Args(held, "user", loglimit.Clip(ra.Username), "client", ra.SrcAddr.String())...)
			}
		}
		return ra.Username, creds.Decoy()[0], true
	}
	key := keys[0]
	if len(keys) > 1 {
		if k, ok := s.gate.TakeKey(ra.SrcAddr, ra.Username); ok {
			key = k
		}
	}
	// pion signs its answer with key; the gate signs it again once it has
	// added the error's reason phrase.
	s.gate.NoteKey(ra.SrcAddr, key)
	return userID, key, true
}

// admit is pion's QuotaHandler, called for a new, authenticated Allocate
// only: refresh, permissions, channels and data never come here, which is
// exactly what lets a drain refuse new allocations and keep the old ones.
func (s *Server) admit(userID, _ string, src net.Addr) bool {
	defer s.catch("quota handler") // refuses: 486
	if !s.accepting() {
		s.obs.AllocationRejected(RejectDraining)
		if held, ok := s.allow(s.logRate.draining, slog.LevelInfo); ok {
			s.log.Info("allocation refused: draining", loglimit.Args(held, "user", userID, "client", src.String())...)
		}
		return false
	}
	ip := netaddr.IP(src)
	if s.overCapacity() {
		s.obs.AllocationRejected(RejectBandwidth)
		if held, ok := s.allow(s.logRate.totalBPS, slog.LevelInfo); ok {
			s.log.Info("allocation refused: limits.total_bps reached",
				loglimit.Args(held, "user", userID, "client", src.String())...)
		}
		return false
	}
	if err := s.registry.Admit(userID, ip); err != nil {
		s.obs.AllocationRejected(RejectQuota)
		if held, ok := s.allow(s.logRate.quota, slog.LevelInfo); ok {
			s.log.Info("allocation refused", loglimit.Args(held, "user", userID, "client", src.String(), "reason", err)...)
		}
		return false
	}
	return true
}

// permit is pion's PermissionHandler for CreatePermission and ChannelBind
// (pion answers 403 on false).
func (s *Server) permit(client net.Addr, peer net.IP) bool {
	defer s.catch("permission handler") // refuses: 403
	if s.peers.Load().Allowed(peer) {
		return true
	}
	s.obs.PermissionRejected(RejectPeerDenied)
	if held, ok := s.allow(s.logRate.peerRefused, slog.LevelInfo); ok {
		s.log.Info("peer refused", loglimit.Args(held, "client", client.String(), "peer", peer)...)
	}
	return false
}

// transportOf tells the client transport of an allocation from its
// 5-tuple: UDP by the listening socket, TLS or TCP by the connection, which
// the edge knows (a shared TCP+TLS port serves both on one address).
func (s *Server) transportOf(client, server net.Addr) allocation.Transport {
	if _, ok := server.(*net.UDPAddr); ok {
		return allocation.UDP
	}
	if s.edge.StreamTLS(client, server) {
		return allocation.TLS
	}
	return allocation.TCP
}

// events mirrors pion's allocation lifecycle into the registry and the log.
// pion calls these under its own locks: nothing here blocks.
func (s *Server) events() turn.EventHandler {
	return turn.EventHandler{
		OnAuth: func(src, _ net.Addr, _, username, _, method string, ok bool) {
			defer s.catch("OnAuth")
			if !ok && method == stun.MethodAllocate.String() {
				s.obs.AllocationRejected(RejectAuth)
				if held, ok := s.allow(s.logRate.badCredentials, slog.LevelInfo); ok {
					s.log.Info("allocation refused: bad credentials",
						loglimit.Args(held, "user", loglimit.Clip(username), "client", src.String())...)
				}
			}
		},
		OnAllocationCreated: func(src, dst net.Addr, _, userID, realm string, relayAddr net.Addr, _ int) {
			defer s.catch("OnAllocationCreated")
			t := s.transportOf(src, dst)
			// The user's shared rate is released with the registry's entry,
			// and taken before it, so a reload that lists the entry finds it.
			shared := s.userRates.acquire(userID, s.limits)
			if old, replaced := s.registry.Add(allocation.Info{
				Client: copyAddr(src), KeyedBy: src, Server: dst, Transport: t, User: userID, Realm: realm,
				Relay: relayAddr, Created: time.Now(),
			}); replaced {
				s.userRates.release(old.User) // its deletion will find the new entry
			}
			stream, _ := s.edge.Stream(src, dst) // nil for UDP clients
			var reactor edge.Reactor
			if loop, ok := s.relay.Reactor(relayAddr); ok && stream != nil {
				reactor = loop // a plain TCP client's connection is read where its relay socket is
			}
			s.edge.Allocated(src, dst, reactor)
			if err := s.relay.AttachClient(relayAddr, src, dst, stream); err != nil {
				s.log.Warn("fast path not attached", "relay", relayAddr.String(), "err", err)
			}
			if err := s.limitNew(relayAddr, userID, shared); err != nil {
				s.log.Warn("bandwidth limit not applied", "relay", relayAddr.String(), "err", err)
			}
			df := s.gate.TakeDontFragment(src, dst)
			if df {
				if err := s.relay.SetDontFragment(relayAddr); err != nil {
					s.log.Warn("don't-fragment not applied", "relay", relayAddr.String(), "err", err)
				}
			}
			s.obs.AllocationCreated(t)
			// A record, not limited: the allocation rate (quotas, credentials) bounds it.
			s.log.Info("allocation created", "user", userID, "client", src.String(), "transport", t.String(),
				"relay", relayAddr.String(), "dont_fragment", df, "allocations", s.registry.Count())
		},
		OnPermissionCreated: func(_, _ net.Addr, _, _, _ string, relayAddr net.Addr, peer net.IP) {
			defer s.catch("OnPermissionCreated")
			if err := s.relay.Permit(relayAddr, peer, false); err != nil {
				s.log.Warn("permission not mirrored to the fast path", "relay", relayAddr.String(), "err", err)
			}
		},
		OnPermissionDeleted: func(_, _ net.Addr, _, _, _ string, relayAddr net.Addr, peer net.IP) {
			defer s.catch("OnPermissionDeleted")
			_ = s.relay.Permit(relayAddr, peer, true)
		},
		OnChannelCreated: func(src, _ net.Addr, _, _, _ string, relayAddr, peer net.Addr, number uint16) {
			defer s.catch("OnChannelCreated")
			if err := s.relay.BindChannel(relayAddr, peer, number, false); err != nil {
				s.log.Warn("channel not mirrored to the fast path", "relay", relayAddr.String(), "err", err)
			}
			if held, ok := s.allow(s.logRate.channelBound, slog.LevelDebug); ok {
				s.log.Debug("channel bound", loglimit.Args(held, "client", src.String(), "relay", relayAddr.String(),
					"peer", peer.String(), "channel", number)...)
			}
		},
		OnChannelDeleted: func(_, _ net.Addr, _, _, _ string, relayAddr, peer net.Addr, number uint16) {
			defer s.catch("OnChannelDeleted")
			_ = s.relay.BindChannel(relayAddr, peer, number, true)
		},
		OnAllocationDeleted: func(src, dst net.Addr, _, _, _ string) {
			defer s.catch("OnAllocationDeleted")
			info, ok := s.registry.Remove(src, dst)
			if !ok {
				return
			}
			s.userRates.release(info.User)
			s.edge.Released(src, dst) // a TCP/TLS connection left idle is closed in time
			u, _ := s.relay.Usage(info.Relay)
			s.logUsage(info, u, endReason(info, src))
			// Last: src may be the object the relay retires (relay/retire.go).
			s.relay.Deleted(info.Relay)
		},
	}
}
