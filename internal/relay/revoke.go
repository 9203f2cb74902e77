package relay

import (
	"net/netip"
)

// Revoke closes every RFC 6062 peer connection to a peer denied reports.
// A reload that denies peers calls it: live allocations must stop relaying
// to them at once, not when their permissions expire. The permissions and
// channels themselves are the allocation table's (Table.Revoke), which the
// fast path reads through the routes; tcpListener's admission refuses new
// peer connections from denied peers (Options.Forbidden).
func (rl *Relay) Revoke(denied func(netip.Addr) bool) {
	rl.mu.Lock()
	var peers []*peerConn
	for _, r := range rl.tcp {
		for pc := range r.conns {
			if denied(pc.peer) {
				peers = append(peers, pc)
			}
		}
	}
	rl.mu.Unlock()
	for _, pc := range peers {
		_ = pc.Close()
	}
}
