package relay

import (
	"fmt"
	"net"
)

// Usage returns the traffic so far of the live UDP relay socket advertised
// as relayAddr.
func (g *Generator) Usage(relayAddr net.Addr) (Usage, error) {
	ua, ok := relayAddr.(*net.UDPAddr)
	if !ok {
		return Usage{}, fmt.Errorf("usage of relay %v: %w", relayAddr, ErrNotTracked)
	}
	k := liveKey{v6: ua.IP.To4() == nil, port: ua.Port}
	g.mu.Lock()
	c := g.live[k]
	g.mu.Unlock()
	if c == nil {
		return Usage{}, fmt.Errorf("usage of relay %v: %w", relayAddr, ErrNotTracked)
	}
	return c.tally.usage(), nil
}
