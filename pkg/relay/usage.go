package relay

import (
	"fmt"
	"net"
)

// Usage returns the traffic of the UDP relay socket advertised as
// relayAddr: live, or closed and awaiting pion's deletion report, whose
// handler reads the final figures this way before calling Deleted.
func (g *Generator) Usage(relayAddr net.Addr) (Usage, error) {
	ua, ok := relayAddr.(*net.UDPAddr)
	if !ok {
		return Usage{}, fmt.Errorf("usage of relay %v: %w", relayAddr, ErrNotTracked)
	}
	k := liveKey{v6: ua.IP.To4() == nil, port: ua.Port}
	g.mu.Lock()
	c := g.live[k]
	if c == nil {
		c = g.retiring[k]
	}
	g.mu.Unlock()
	if c == nil {
		return Usage{}, fmt.Errorf("usage of relay %v: %w", relayAddr, ErrNotTracked)
	}
	return c.tally.usage(), nil
}
