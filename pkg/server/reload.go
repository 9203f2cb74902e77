package server

import (
	"fmt"
	"net/netip"

	"github.com/turnd/turnd/pkg/config"
)

// Reload applies a new configuration to new requests: credentials, peer
// rules, quotas, lifetimes caps, alternates and the TLS certificate. Live
// allocations are untouched, except those of revoked users with
// auth.disconnect_on_revoke. Settings set up once (config.Reload lists
// them) keep their running values and are returned when they differ, so the
// caller can say a restart is needed. On error nothing changes.
func (s *Server) Reload(cfg config.Config) (restartNeeded []string, err error) {
	s.freeze.Lock() // not while a successor is being handed the table
	defer s.freeze.Unlock()
	cfg, restartNeeded = config.Reload(*s.cfg.Load(), cfg)
	if err := s.apply(cfg); err != nil {
		s.obs.Reloaded(false)
		return restartNeeded, fmt.Errorf("reload: %w", err)
	}
	s.obs.Reloaded(true)
	if s.fleet != nil {
		s.fleet.setRevoked(cfg.Auth.RevokedUsers)
	}
	s.revokeDenied()
	s.applyRates()
	if cfg.Auth.DisconnectOnRevoke {
		for _, user := range cfg.Auth.RevokedUsers {
			if s.table.UserCount(user) > 0 {
				s.disconnect(user, "", "reload: auth.revoked_users")
			}
		}
	}
	return restartNeeded, nil
}

// revokeDenied stops live allocations relaying to peers the filter in
// force denies: their permissions and channels go from the table, and so
// from the fast path.
func (s *Server) revokeDenied() {
	peers := s.peers.Load()
	denied := func(a netip.Addr) bool { return !peers.AllowedAddr(a) }
	perms, chans := s.table.Revoke(denied)
	s.relay.Revoke(denied) // RFC 6062 peer connections to them close; the table holds the sets

	if perms+chans > 0 {
		s.log.Info("reload: live permissions and channels to peers now denied removed",
			"permissions", perms, "channels", chans)
	}
}

// forbidden reports peers no relayed data may reach whatever the
// permissions say: turnd's own sockets, and peers the filter denies (after
// a reload; before, no permission to them could be created).
func (s *Server) forbidden(ap netip.AddrPort) bool {
	return s.own.contains(ap) || !s.peers.Load().AllowedAddr(ap.Addr())
}

// ReloadFailed records a reload that failed before reaching the server
// (an unreadable or invalid file), for the reload metric.
func (s *Server) ReloadFailed() { s.obs.Reloaded(false) }
