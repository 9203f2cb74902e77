package relay

import (
	"fmt"
	"net"
	"net/netip"

	"github.com/turnd/turnd/internal/netaddr"
)

// What turnd mirrors of an RFC 6062 relay's client, permissions and
// channels into its route, so that the per-allocation caps hold for TCP
// relays too and its listener admits permitted peers only.

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

// permitTCP mirrors a permission of an RFC 6062 relay into its route, for
// its cap, its usage record and the peers it admits.
func (rl *Relay) permitTCP(k liveKey, peer netip.Addr, revoke bool) {
	rl.mu.Lock()
	defer rl.mu.Unlock()
	if r := rl.tcp[k]; r != nil {
		permit(r.route, peer, revoke)
	}
}

// permitsTCP reports whether the RFC 6062 relay of k has a permission for
// peer; false once the relay is gone.
func (rl *Relay) permitsTCP(k liveKey, peer netip.Addr) bool {
	rl.mu.Lock()
	r := rl.tcp[k]
	rl.mu.Unlock()
	return r != nil && r.route.Permitted(peer)
}

// bindTCP mirrors a channel of an RFC 6062 relay into its route, for its
// cap and its usage record.
func (rl *Relay) bindTCP(k liveKey, peer netip.AddrPort, number uint16, unbind bool) {
	rl.mu.Lock()
	defer rl.mu.Unlock()
	if r := rl.tcp[k]; r != nil {
		bindChannel(r.route, peer, number, unbind)
	}
}
