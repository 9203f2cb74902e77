package server

import (
	"crypto/tls"
	"fmt"
	"net/netip"
	"time"

	"github.com/turnd/turnd/internal/auth"
	"github.com/turnd/turnd/internal/bindings"
	"github.com/turnd/turnd/internal/netaddr"
	"github.com/turnd/turnd/internal/relay"
	"github.com/turnd/turnd/pkg/config"
	"github.com/turnd/turnd/pkg/peerfilter"
	"github.com/turnd/turnd/pkg/turn"
)

// apply builds everything that can change at runtime from cfg and swaps it
// in only if all of it is valid: a reload is all or nothing.
func (s *Server) apply(cfg config.Config) error {
	peers, err := peerfilter.New(peerfilter.Options{
		AllowLoopback: cfg.Peers.AllowLoopback,
		Allowed:       cfg.Peers.Allowed,
		Denied:        cfg.Peers.Denied,
	})
	if err != nil {
		return fmt.Errorf("build peer filter: %w", err)
	}
	var cert *tls.Certificate
	if cfg.ServesTLS() {
		c, err := tls.LoadX509KeyPair(cfg.TLS.CertFile, cfg.TLS.KeyFile)
		if err != nil {
			return fmt.Errorf("load tls certificate: %w", err)
		}
		cert = &c
	}
	alts, err := parseAlternates(cfg.Drain.AlternateServers)
	if err != nil {
		return err
	}
	creds := s.credentials(cfg)

	s.cfg.Store(&cfg)
	s.peers.Store(peers)
	s.creds.Store(creds)
	if cert != nil {
		s.cert.Store(cert)
	}
	s.table.SetLimits(AllocationLimits(cfg))
	s.alts.set(alts)
	if s.sockets != nil { // New binds after its first apply, with these limits
		s.sockets.SetConnLimits(connLimits(cfg))
	}
	if s.turn != nil { // New builds the handler after its first apply
		s.turn.SetPolicy(s.policy(cfg))
		s.edge.SetIdleTimeout(cfg.Limits.IdleConnectionTimeout)
	}
	return nil
}

// credentials is the credential store of cfg, refusing the users revoked
// by cfg and, in a fleet, by any node.
func (s *Server) credentials(cfg config.Config) *auth.Store {
	return auth.New(auth.Options{
		Realm:     cfg.Realm,
		Users:     cfg.Auth.Users,
		Secrets:   cfg.Auth.Secrets,
		Separator: cfg.Auth.RESTSeparator,

		MaxValidity: cfg.Auth.MaxRESTValidity,
		Revoked:     s.revokedUsers(cfg),
	})
}

// policy is the handlers' view of cfg; apply has already checked it.
func (s *Server) policy(cfg config.Config) *turn.Policy {
	allocateRate, allocateBurst := cfg.Limits.AllocateRate()
	var fams bindings.Families
	if s.relay.Serves(false) {
		fams |= bindings.V4
	}
	if s.relay.Serves(true) {
		fams |= bindings.V6
	}
	return &turn.Policy{
		Creds:           s.creds.Load(),
		Peer:            s.peerAllowed,
		DefaultLifetime: defaultLifetime(cfg),
		MaxLifetime:     cfg.Limits.MaxLifetime,
		Families:        fams,
		TCPAllocations:  cfg.Relay.TCPAllocations,

		PermissionsPerAllocation: cfg.Limits.PermissionsPerAllocation,
		ChannelsPerAllocation:    cfg.Limits.ChannelsPerAllocation,
		MaxPendingConnects:       relay.MaxPendingConnects,

		OverCapacity:    s.overCapacity,
		Alternates:      s.alternates,
		AlternateDomain: cfg.Drain.AlternateDomain,

		UnauthenticatedRate: cfg.Limits.UnauthenticatedRate,
		UserAllocateRate:    allocateRate,
		UserAllocateBurst:   allocateBurst,
	}
}

// peerAllowed is the handlers' peer check: the peer filter in force, and
// never one of turnd's own sockets.
func (s *Server) peerAllowed(peer netip.AddrPort) bool {
	return !s.own.contains(peer) && s.peers.Load().AllowedAddr(netaddr.Unmap(peer).Addr())
}

// alternates are the servers a 300 offers while the table does not admit.
func (s *Server) alternates() []netip.AddrPort {
	list := s.alts.list()
	out := make([]netip.AddrPort, 0, len(list))
	for _, a := range list {
		out = append(out, netaddr.AddrPort(a))
	}
	return out
}

// defaultLifetime is the lifetime granted when a client asks for none or
// for less (RFC 8656 §3.9's 10 minutes), never more than the cap.
func defaultLifetime(cfg config.Config) time.Duration {
	return min(10*time.Minute, cfg.Limits.MaxLifetime)
}
