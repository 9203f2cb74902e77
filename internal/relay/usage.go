package relay

import (
	"fmt"
	"net"

	"github.com/turnd/turnd/internal/traffic"
)

// Usage returns the traffic of the relay advertised as relayAddr (UDP
// socket or RFC 6062 listener): live, or closed and awaiting pion's deletion report, whose
// handler reads the final figures this way before calling Deleted.
func (rl *Relay) Usage(relayAddr net.Addr) (traffic.Usage, error) {
	if k, ok := tcpKey(relayAddr); ok {
		return rl.tcpUsage(k, relayAddr)
	}
	ua, ok := relayAddr.(*net.UDPAddr)
	if !ok {
		return traffic.Usage{}, fmt.Errorf("usage of relay %v: %w", relayAddr, ErrNotTracked)
	}
	k := liveKey{v6: ua.IP.To4() == nil, port: ua.Port}
	rl.mu.Lock()
	c := rl.live[k]
	if c == nil {
		c = rl.retiring[k]
	}
	rl.mu.Unlock()
	if c == nil {
		return traffic.Usage{}, fmt.Errorf("usage of relay %v: %w", relayAddr, ErrNotTracked)
	}
	return c.route.Usage.Usage(), nil
}

// Disconnect ends the allocation whose relay was advertised as relayAddr
// (an RFC 6062 relay: see tcpDisconnect). A UDP relay's socket closes, so data stops at once both ways, and pion's
// goroutine for the socket, woken by the close, deletes the allocation
// (its client's next request gets 437) and reports the deletion.
func (rl *Relay) Disconnect(relayAddr net.Addr) error {
	if k, ok := tcpKey(relayAddr); ok {
		return rl.tcpDisconnect(k, relayAddr)
	}
	ua, ok := relayAddr.(*net.UDPAddr)
	if !ok {
		return fmt.Errorf("disconnect relay %v: %w", relayAddr, ErrNotTracked)
	}
	rl.mu.Lock()
	c := rl.live[liveKey{v6: ua.IP.To4() == nil, port: ua.Port}]
	rl.mu.Unlock()
	if c == nil {
		return fmt.Errorf("disconnect relay %v: %w", relayAddr, ErrNotTracked)
	}
	c.cut.Store(true)
	return c.Close()
}
