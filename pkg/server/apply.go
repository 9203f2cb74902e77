package server

import (
	"crypto/tls"
	"fmt"
	"net"
	"net/netip"
	"time"

	"github.com/turnd/turnd/internal/auth"
	"github.com/turnd/turnd/internal/gate"
	"github.com/turnd/turnd/internal/netaddr"
	"github.com/turnd/turnd/internal/relay"
	"github.com/turnd/turnd/pkg/allocation"
	"github.com/turnd/turnd/pkg/config"
	"github.com/turnd/turnd/pkg/peerfilter"
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
	creds := auth.New(auth.Options{
		Realm:     cfg.Realm,
		Users:     cfg.Auth.Users,
		Secrets:   cfg.Auth.Secrets,
		Separator: cfg.Auth.RESTSeparator,

		MaxValidity: cfg.Auth.MaxRESTValidity,
		Revoked:     cfg.Auth.RevokedUsers,
	})

	s.cfg.Store(&cfg)
	s.peers.Store(peers)
	s.creds.Store(creds)
	if cert != nil {
		s.cert.Store(cert)
	}
	s.registry.SetLimits(AllocationLimits(cfg))
	s.alts.set(alts)
	if s.sockets != nil { // New binds after its first apply, with these limits
		s.sockets.SetConnLimits(connLimits(cfg))
	}
	if s.gate != nil {
		s.gate.SetPolicy(s.policy(cfg))
	}
	return nil
}

// policy is the gate's view of cfg; apply has already checked it.
func (s *Server) policy(cfg config.Config) *gate.Policy {
	allocateRate, allocateBurst := cfg.Limits.AllocateRate()
	return &gate.Policy{
		Keys:            gateKeys(s),
		MultiKey:        len(cfg.Auth.Secrets) > 1,
		TCPAllocations:  cfg.Relay.TCPAllocations,
		MaxLifetime:     grantableLifetime(cfg.Limits.MaxLifetime),
		Alternates:      s.alts.list,
		AlternateDomain: cfg.Drain.AlternateDomain,
		PeerAllowed:     func(ip net.IP) bool { return s.peers.Load().Allowed(ip) },
		OwnAddress:      s.own.contains,
		HasAllocation:   s.registry.Has,
		AllocationUser:  s.registry.User,

		DefaultLifetime:      defaultLifetime(cfg),
		RelayFamily:          s.relay.Serves,
		RefuseUnknownMethods: true,

		UnauthenticatedRate:      cfg.Limits.UnauthenticatedRate,
		UserAllocateRate:         allocateRate,
		UserAllocateBurst:        allocateBurst,
		Bindings:                 bindings{s},
		PermissionsPerAllocation: cfg.Limits.PermissionsPerAllocation,
		ChannelsPerAllocation:    cfg.Limits.ChannelsPerAllocation,
		IdleTimeout:              cfg.Limits.IdleConnectionTimeout,

		TCPRelay: s.connectsFull,
	}
}

// connectsFull tells the gate whether a client's allocation is an RFC 6062
// TCP relay, and whether its pending Connects are at the relay's cap: the
// relay enforces the cap on accepted peers too, so it is stated there only.
func (s *Server) connectsFull(client, server net.Addr) (full, ok bool) {
	if s.relay == nil {
		return false, false
	}
	n, ok := s.relay.PendingConnects(netaddr.Of(client, server))
	return n >= relay.MaxPendingConnects, ok
}

// gateKeys gives the gate a refused username's decoy key instead of the
// error (see authenticate): its MESSAGE-INTEGRITY check then fails after the
// same work as a wrong password's, and the request goes on to pion as one.
func gateKeys(s *Server) func(u, r string) (string, [][]byte, error) {
	return func(u, r string) (string, [][]byte, error) {
		creds := s.creds.Load()
		id, keys, err := creds.Keys(u, r)
		if err != nil {
			return "", creds.Decoy(), nil
		}
		return id, keys, nil
	}
}

// bindings lets the gate count an allocation's permissions and channels,
// which the relay fast path mirrors from pion.
type bindings struct{ s *Server }

func (b bindings) Permissions(client, server net.Addr) (int, func(netip.Addr) bool, bool) {
	if b.s.relay == nil {
		return 0, nil, false
	}
	return b.s.relay.Permissions(netaddr.Of(client, server))
}

func (b bindings) Channels(client, server net.Addr) (int, func(uint16) bool, bool) {
	if b.s.relay == nil {
		return 0, nil, false
	}
	return b.s.relay.Channels(netaddr.Of(client, server))
}

// pionMaxLifetime is the longest LIFETIME pion grants as asked: it answers a
// request of an hour or more with its 10-minute default instead.
const pionMaxLifetime = time.Hour - time.Second

// grantableLifetime is the cap the gate applies so that a client asking for
// limits.max_lifetime (default 1h) gets as close to it as pion allows, rather
// than pion's 10-minute default.
func grantableLifetime(max time.Duration) time.Duration {
	return min(max, pionMaxLifetime)
}

// defaultLifetime is the lifetime granted when a client asks for none or
// for less (RFC 8656 §3.9's 10 minutes), never more than the cap.
func defaultLifetime(cfg config.Config) time.Duration {
	return min(10*time.Minute, grantableLifetime(cfg.Limits.MaxLifetime))
}

// AllocationLimits are the allocation quotas cfg sets (limits.total_allocations,
// user_allocations, ip_allocations, prefix_allocations), as the registry applies them.
func AllocationLimits(cfg config.Config) allocation.Limits {
	perPrefix, _ := cfg.Limits.PrefixCaps()
	return allocation.Limits{
		Total: cfg.Limits.TotalAllocations, PerUser: cfg.Limits.UserAllocations, PerIP: cfg.Limits.IPAllocations,
		PerPrefix: perPrefix,
	}
}
