package relay

import (
	"fmt"
	"net"
	"net/netip"

	"github.com/turnd/turnd/internal/netaddr"
)

// What turnd mirrors of an RFC 6062 relay's client, permissions and
// channels, so that the per-allocation caps hold for TCP relays too.

// attachTCP records the client of an RFC 6062 relay.
func (rl *Relay) attachTCP(k liveKey, client, server net.Addr) error {
	ca, ok := client.(*net.TCPAddr)
	if !ok {
		return nil
	}
	id := rl.serverOf(server)
	rl.mu.Lock()
	defer rl.mu.Unlock()
	r := rl.tcp[k]
	if r == nil {
		return fmt.Errorf("attach client %v: %w", client, ErrNotTracked)
	}
	r.client, r.hasClient = clientKey{client: netaddr.AddrPort(ca), server: id}, true
	rl.tcpByClient[r.client] = r
	return nil
}

// permitTCP mirrors a permission of an RFC 6062 relay, for its cap and
// its usage record.
func (rl *Relay) permitTCP(k liveKey, peer netip.Addr, revoke bool) {
	rl.mu.Lock()
	defer rl.mu.Unlock()
	r := rl.tcp[k]
	switch {
	case r == nil:
	case revoke:
		delete(r.perms, peer)
	default:
		if r.perms == nil {
			r.perms = make(map[netip.Addr]struct{})
		}
		if _, had := r.perms[peer]; !had {
			r.traffic.tally.CountPermission()
		}
		r.perms[peer] = struct{}{}
	}
}

// permitsTCP reports whether the RFC 6062 relay of k has a permission for
// peer; false once the relay is gone.
func (rl *Relay) permitsTCP(k liveKey, peer netip.Addr) bool {
	rl.mu.Lock()
	defer rl.mu.Unlock()
	r := rl.tcp[k]
	if r == nil {
		return false
	}
	_, ok := r.perms[peer]
	return ok
}

// bindTCP mirrors a channel of an RFC 6062 relay, for its cap and its
// usage record.
func (rl *Relay) bindTCP(k liveKey, number uint16, unbind bool) {
	rl.mu.Lock()
	defer rl.mu.Unlock()
	r := rl.tcp[k]
	switch {
	case r == nil:
	case unbind:
		delete(r.chans, number)
	default:
		if r.chans == nil {
			r.chans = make(map[uint16]struct{})
		}
		if _, had := r.chans[number]; !had {
			r.traffic.tally.CountChannel()
		}
		r.chans[number] = struct{}{}
	}
}

// tcpPermissions is Permissions for an RFC 6062 relay.
func (rl *Relay) tcpPermissions(t netaddr.FiveTuple) (int, func(netip.Addr) bool, bool) {
	r := rl.tcpRelayOf(t)
	if r == nil {
		return 0, nil, false
	}
	rl.mu.Lock()
	defer rl.mu.Unlock()
	set := make(map[netip.Addr]struct{}, len(r.perms))
	for a := range r.perms {
		set[a] = struct{}{}
	}
	return len(set), func(a netip.Addr) bool { _, ok := set[a]; return ok }, true
}

// tcpChannels is Channels for an RFC 6062 relay.
func (rl *Relay) tcpChannels(t netaddr.FiveTuple) (int, func(uint16) bool, bool) {
	r := rl.tcpRelayOf(t)
	if r == nil {
		return 0, nil, false
	}
	rl.mu.Lock()
	defer rl.mu.Unlock()
	set := make(map[uint16]struct{}, len(r.chans))
	for n := range r.chans {
		set[n] = struct{}{}
	}
	return len(set), func(n uint16) bool { _, ok := set[n]; return ok }, true
}
