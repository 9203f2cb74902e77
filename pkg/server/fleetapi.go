package server

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/turnd/turnd/internal/auth"
	"github.com/turnd/turnd/pkg/fleet"
)

// FleetSessions returns every live node's sessions: this node's as they
// are now, the others' as they last published them (at most Lease/3 old).
func (s *Server) FleetSessions(ctx context.Context) ([]fleet.Session, error) {
	c, err := s.fleetClient()
	if err != nil {
		return nil, err
	}
	others, err := c.Sessions(ctx)
	if err != nil {
		return nil, fmt.Errorf("list fleet sessions: %w", err)
	}
	var out []fleet.Session
	for _, info := range s.Sessions("") {
		fs := fleetSession(info)
		fs.Node = c.Node()
		out = append(out, fs)
	}
	for _, fs := range others {
		if fs.Node != c.Node() {
			out = append(out, fs)
		}
	}
	return out, nil
}

// FleetDisconnect asks every other node to end user's allocations (at
// most once: a node not listening at that moment misses it); by says who
// asked, for their logs and this one's.
func (s *Server) FleetDisconnect(ctx context.Context, user, by string) error {
	c, err := s.fleetClient()
	if err != nil {
		return err
	}
	s.log.Info("fleet disconnect requested", "by", by, "user", user)
	if err := c.Disconnect(ctx, user); err != nil {
		return fmt.Errorf("fleet disconnect %q: %w", user, err)
	}
	return nil
}

// Credentials are TURN REST API credentials (draft-uberti-behave-turn-rest)
// with the URIs of the nodes to use them on.
type Credentials struct {
	Username, Password string
	TTL                int64 // seconds
	URIs               []string
}

// Credentials makes REST credentials for user, valid for
// fleet.credentials.ttl and signed with the first auth.secrets entry, and
// lists the URIs of the fleet.credentials.nodes least-loaded ready nodes.
func (s *Server) Credentials(ctx context.Context, user string) (Credentials, error) {
	cfg := s.cfg.Load()
	if len(user) == 0 || len(user) > 256 || !utf8.ValidString(user) || strings.ContainsFunc(user, unicode.IsControl) {
		return Credentials{}, fmt.Errorf("credentials for %q: %w", user, ErrBadUser)
	}
	if len(cfg.Auth.Secrets) == 0 {
		return Credentials{}, fmt.Errorf("credentials: no auth.secrets: %w", ErrNoFleet)
	}
	c, err := s.fleetClient()
	if err != nil {
		return Credentials{}, err
	}
	nodes, err := leastLoaded(ctx, c, cfg.Fleet.Credentials.Nodes, "")
	if err != nil {
		return Credentials{}, fmt.Errorf("credentials: find nodes: %w", err)
	}
	var uris []string
	for _, n := range nodes {
		uris = append(uris, n.URIs...)
	}
	if len(uris) == 0 {
		return Credentials{}, fmt.Errorf("credentials: %w", ErrNoNodes)
	}
	ttl := cfg.Fleet.Credentials.TTL
	username := strconv.FormatInt(s.now().Add(ttl).Unix(), 10) + cfg.Auth.RESTSeparator + user
	return Credentials{Username: username, Password: auth.RESTPassword(cfg.Auth.Secrets[0], username),
		TTL: int64(ttl.Seconds()), URIs: uris}, nil
}

// leastLoaded is the n least-loaded serving nodes but exclude that name a
// URI: a node that advertises none cannot be sent a client.
func leastLoaded(ctx context.Context, c *fleet.Client, n int, exclude string) ([]fleet.Node, error) {
	nodes, err := c.LeastLoaded(ctx, math.MaxInt, exclude)
	if err != nil {
		return nil, err
	}
	nodes = slices.DeleteFunc(nodes, func(x fleet.Node) bool { return len(x.URIs) == 0 })
	return nodes[:min(n, len(nodes))], nil
}

// fleetClient is the open fleet client.
func (s *Server) fleetClient() (*fleet.Client, error) {
	if s.fleet == nil {
		return nil, ErrNoFleet
	}
	c := s.fleet.client.Load()
	if c == nil {
		return nil, fmt.Errorf("fleet not connected yet: %w", ErrNoFleet)
	}
	return c, nil
}
