package relay

import (
	"net"

	"github.com/turnd/turnd/internal/netaddr"
)

// serverOf numbers turnd's side of a 5-tuple (a UDP or TCP address) for
// the fast path's keys, giving it a number the first time (serverID).
// Called per allocation and per socket or connection, never per packet.
func (rl *Relay) serverOf(addr net.Addr) serverID {
	return rl.serverID(netaddr.Of(nil, addr))
}
