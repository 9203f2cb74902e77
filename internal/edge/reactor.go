package edge

// reactorRead bounds what a reactor reads from one connection per turn:
// whatever it reads goes to the peer at once, as a burst of datagrams that
// nothing paces (UDP has no flow control), so a small bound keeps the
// bursts from many connections within a peer's receive buffer (figures:
// docs/benchmarks.md). A larger frame takes several turns.
const reactorRead = 2048

// Reactor reads a plain TCP client's connection for the edge: the relay's
// downlink loop (relay.Loop), which then carries both directions of the
// client. It is handed the connection at accept, for the connection's life
// (StreamOptions.Reactor), and its ready serves STUN messages inline too,
// so the Handler must not block.
type Reactor interface {
	// Watch calls ready on the reactor's goroutine whenever fd is readable,
	// until ready returns false; if the reactor stops first it calls
	// released instead. Either way fd is then out of its set.
	Watch(fd int, ready func() bool, released func()) error
	// Unwatch takes fd out of the set if it is there and reports whether it
	// was; after it returns, ready is not running.
	Unwatch(fd int) bool
}
