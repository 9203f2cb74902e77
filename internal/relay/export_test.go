package relay

// liveCount returns how many UDP relay sockets are open.
func (g *Relay) liveCount() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.live)
}
