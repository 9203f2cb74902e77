package relay

import (
	"net"
	"net/netip"

	"github.com/turnd/turnd/internal/netaddr"
)

// Revoke removes, from every live allocation's fast path, the permissions
// and channels of the peers denied reports, and returns how many it
// removed. A reload that denies peers calls it: live allocations must stop
// relaying to them at once, not when their permissions expire.
//
// pion keeps its own permissions and channels until they expire (clients
// cannot refresh them: the peer filter refuses). What the fast path no
// longer takes goes to pion and out through Conn.WriteTo, where
// Options.Forbidden must then refuse the peer as well.
//
// RFC 6062 relays lose their mirrored permissions to denied peers, and
// their peer connections to them are closed (pion then closes the client's
// data connection); tcpListener.Accept refuses new ones. Routes opened
// with Open keep their sets, which only the allocation table writes: their
// RFC 6062 peer connections to denied peers are closed all the same.
func (rl *Relay) Revoke(denied func(netip.Addr) bool) (permissions, channels int) {
	rl.mu.Lock()
	conns := make([]*Conn, 0, len(rl.live))
	for _, c := range rl.live {
		conns = append(conns, c)
	}
	var peers []*peerConn
	for _, r := range rl.tcp {
		if !r.opened { // an opened route's sets are the table's (Table.Revoke)
			p, _ := revokeRoute(r.route, denied)
			permissions += p
		}
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
	for _, c := range conns {
		if c.opened {
			continue
		}
		c.bindMu.Lock()
		p, ch := revokeRoute(c.route, denied)
		c.bindMu.Unlock()
		permissions += p
		channels += ch
	}
	return permissions, channels
}

// forbidden reports whether the Forbidden option refuses addr.
func (rl *Relay) forbidden(addr net.Addr) bool {
	if rl.opts.Forbidden == nil {
		return false
	}
	ua, ok := addr.(*net.UDPAddr)
	if !ok {
		return false
	}
	return rl.opts.Forbidden(netaddr.AddrPort(ua))
}
