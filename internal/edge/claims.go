package edge

import (
	"net"

	"github.com/turnd/turnd/internal/netaddr"
)

// claim books the 5-tuple of c, seen with the client address client, for
// c alone, or returns why c must be closed. The allocation table knows a
// TCP client by its 5-tuple, so a second connection holding it would be
// served the first one's allocation and, hanging up, end it. The kernel keeps real connections apart; only a PROXY header can
// announce a held 5-tuple again (two proxy frontends, a NAT that reuses a
// source port per destination). Called with s.mu held; Close frees it.
func (s *streamConns) claim(c *trackedConn, client net.Addr) (refused string) {
	k := netaddr.Of(client, c.LocalAddr())
	if _, held := s.held[k]; held {
		return RefuseFiveTuple
	}
	if s.held == nil {
		s.held = make(map[netaddr.FiveTuple]struct{})
	}
	s.held[k] = struct{}{}
	c.tuple, c.claimed = k, true
	return ""
}

// unclaim frees the 5-tuple c holds, if any. Called with s.mu held.
func (s *streamConns) unclaim(c *trackedConn) {
	if c.claimed {
		delete(s.held, c.tuple)
		c.claimed = false
	}
}
