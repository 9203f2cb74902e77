package relay

// liveCount returns how many UDP relay sockets are open.
func (g *Generator) liveCount() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.live)
}
