package server

import (
	"context"
	"net"
	"net/netip"
	"slices"
	"time"

	"github.com/turnd/turnd/pkg/allocation"
	"github.com/turnd/turnd/pkg/config"
	"github.com/turnd/turnd/pkg/fleet"
)

// run publishes this node's state and its users' rates every Lease/3 and
// at once when the drain changes it, and while draining keeps the 300's alternate on the
// least-loaded serving node, until close.
func (f *fleetNode) run(c *fleet.Client) {
	defer close(f.done)
	tick := time.NewTicker(f.opts.Lease / 3)
	defer tick.Stop()
	for {
		f.s.sampleFleetRates(time.Now())
		f.publish(c)
		if !f.s.table.Admitting() {
			f.redirect(c)
		}
		select {
		case <-f.stop:
			return
		case <-tick.C:
		case <-f.drainChanged:
		}
	}
}

// publish hands the client this node's state; it never waits on Redis.
func (f *fleetNode) publish(c *fleet.Client) { c.Publish(f.state()) }

// state is this node's state, load, URIs and sessions now.
func (f *fleetNode) state() fleet.NodeState {
	st := fleet.NodeState{State: fleet.StateServing, Allocations: f.s.table.Count(), BPS: uint64(f.s.relayedBPS()),
		URIs: f.s.advertised()}
	if !f.s.table.Admitting() {
		st.State = fleet.StateDraining
	}
	for _, info := range f.s.table.List("") {
		st.Sessions = append(st.Sessions, fleetSession(info))
	}
	return st
}

func fleetSession(info allocation.Info) fleet.Session {
	return fleet.Session{ID: addrString(info.Relay), User: info.User, Client: addrString(info.Client),
		Transport: info.Transport.String(), Relay: addrString(info.Relay), StartedAt: info.Created.UTC()}
}

func addrString(a net.Addr) string {
	if a == nil {
		return ""
	}
	return a.String()
}

// redirect points the draining 300 at the least-loaded serving node when
// drain.alternate_servers names none.
func (f *fleetNode) redirect(c *fleet.Client) {
	if len(f.s.cfg.Load().Drain.AlternateServers) > 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), f.opts.Lease/3)
	defer cancel()
	nodes, err := leastLoaded(ctx, c, 1, f.opts.Node)
	if err != nil {
		return // the last answer stays
	}
	var entries []alternateEntry
	for _, n := range nodes {
		if e, ok := alternateOf(n.URIs); ok {
			entries = append(entries, e)
		}
	}
	f.s.alts.setFleet(entries)
	if f.s.alts.hasNames() {
		f.s.alts.resolve(ctx)
	}
}

// alternateOf is the address a 300 names for a node: that of its first
// turn: URI over UDP, else of its first turn: URI (never a turns: one,
// which a UDP or TCP client cannot speak).
func alternateOf(uris []string) (alternateEntry, bool) {
	var first *config.TURNURI
	for _, s := range uris {
		u, err := config.ParseTURNURI(s)
		if err != nil || u.Secure {
			continue
		}
		if !u.Secure && u.Transport == "udp" {
			first = &u
			break
		}
		if first == nil {
			first = &u
		}
	}
	if first == nil {
		return alternateEntry{}, false
	}
	e := alternateEntry{host: first.Host, port: first.Port}
	if ip, err := netip.ParseAddr(first.Host); err == nil {
		e.ip = ip.Unmap()
	}
	return e, true
}

// advertised are this node's TURN URIs: fleet.advertise, else those of
// its listening addresses (advertisedURIs).
func (s *Server) advertised() []string {
	cfg := s.cfg.Load()
	if a := cfg.Fleet.Advertise; len(a) > 0 {
		return a
	}
	ext, _ := cfg.ResolveRelay() // validated at start
	return advertisedURIs(s.UDPAddrs(), s.TCPAddrs(), s.TLSAddrs(), ext)
}

// advertisedURIs is one URI per listening address, named by
// relay.external_address of its family where that is set (behind NAT
// clients reach that one), else by the listening address where it is not
// a wildcard.
func advertisedURIs(udp, tcp, tls []net.Addr, ext config.RelayAddresses) []string {
	var out []string
	add := func(addrs []net.Addr, secure bool, transport string) {
		for _, a := range addrs {
			ap, err := netip.ParseAddrPort(a.String())
			if err != nil {
				continue
			}
			ip := ap.Addr().Unmap()
			switch {
			case ip.Is4() && ext.External4.IsValid():
				ip = ext.External4
			case ip.Is6() && ext.External6.IsValid():
				ip = ext.External6
			case ip.IsUnspecified():
				continue
			}
			out = append(out, config.TURNURI{Secure: secure, Host: ip.String(), Port: ap.Port(), Transport: transport}.String())
		}
	}
	add(udp, false, "udp")
	add(tcp, false, "tcp")
	add(tls, true, "tcp")
	return out
}

// disconnected is fleet.Options.OnDisconnect: another node asked every
// node to end user's allocations (the asking node ended its own already).
func (f *fleetNode) disconnected(user, node string) {
	if node == f.opts.Node {
		return
	}
	go f.s.Disconnect(user, "", "fleet node "+node) // the subscriber must not wait for the table
}

// revokedChanged is fleet.Options.OnRevoked: the credentials refuse every
// node's auth.revoked_users from now on, and with auth.disconnect_on_revoke
// the newly revoked users' allocations here end.
func (f *fleetNode) revokedChanged(users []string) {
	users = slices.Clone(users)
	f.revoked.Store(&users)
	go f.s.refreshRevoked()
}

// revokedUsers is the fleet's union of revoked users; nil off a fleet.
func (s *Server) revokedUsers(cfg config.Config) []string {
	if s.fleet == nil {
		return cfg.Auth.RevokedUsers
	}
	p := s.fleet.revoked.Load()
	if p == nil {
		return cfg.Auth.RevokedUsers
	}
	out := slices.Concat(cfg.Auth.RevokedUsers, *p)
	slices.Sort(out)
	return slices.Compact(out)
}

// refreshRevoked rebuilds the credentials with the fleet's revocations.
func (s *Server) refreshRevoked() {
	s.freeze.Lock() // as a reload: not while a successor is handed the table
	defer s.freeze.Unlock()
	cfg := *s.cfg.Load()
	s.creds.Store(s.credentials(cfg))
	s.turn.SetPolicy(s.policy(cfg))
	if cfg.Auth.DisconnectOnRevoke {
		for _, user := range s.revokedUsers(cfg) {
			if s.table.UserCount(user) > 0 {
				s.disconnect(user, "", "fleet: auth.revoked_users")
			}
		}
	}
}
