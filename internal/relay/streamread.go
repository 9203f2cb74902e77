package relay

import (
	"fmt"
)

// A plain TCP client's connection is read by the same downlink loop that
// reads its allocation's relay socket, once it has an allocation: the loop
// carries both directions of its clients, as coturn's relay threads do.
//
// Two reasons. First, balance: with a goroutine per connection reading the
// uplink and one loop per two CPUs writing the downlink, an overloaded
// machine gives the uplink most of the CPU; the loop falls behind and the
// relay sockets' receive buffers overflow (figures: docs/benchmarks.md,
// "No loss when TCP clients overload the machine"). Read by the loop, a
// connection is read no faster than its replies are written, and TCP's own
// flow control slows the client instead. Second, cost: one wake-up of the
// loop serves every connection that became readable, and no read runs
// only to find the connection empty. The edge keeps the protocol: the loop
// only calls the edge's ready function, which relays data frames and hands
// anything else back to the connection's own goroutine (edge.Reactor).

// Loop is the downlink loop of one allocation, as the edge sees it: a
// reactor that reads a plain TCP client's connection for it.
type Loop struct{ d *downlink }

// Watch starts calling ready on the loop's goroutine whenever descriptor fd
// is readable, until ready returns false: fd is then out of the set before
// the loop does anything else. If the loop closes first, released is
// called instead, and fd is out of the set. ready must not block; it runs
// without the loop's lock, so it may call the relay inline (Watch, Unwatch
// of other descriptors, Routes.Open and Routes.Close of allocations this
// loop serves). To leave the set it returns false: Unwatch of its own fd
// would wait for itself.
func (l Loop) Watch(fd int, ready func() bool, released func()) error {
	l.d.mu.Lock()
	defer l.d.mu.Unlock()
	if err := l.d.insert(int32(fd), watched{ready: ready, released: released}); err != nil {
		return fmt.Errorf("watch client connection: %w", err)
	}
	return nil
}

// Unwatch takes fd out of the set, reporting whether it was there (false:
// ready already returned false, or released was called). After it returns,
// ready is not running and will not be called again, so fd may be closed.
func (l Loop) Unwatch(fd int) bool {
	l.d.mu.Lock()
	defer l.d.mu.Unlock()
	l.d.awaitReady(int32(fd))
	if l.d.at(int32(fd)).ready == nil {
		return false
	}
	l.d.unwatch(int32(fd))
	return true
}

// NextLoop returns a downlink loop, round robin, to read a plain TCP
// client's connection from its accept on (before it holds an allocation),
// as the edge does for turnd's own control plane.
func (rl *Relay) NextLoop() (Loop, error) {
	d, err := rl.pickLoop()
	if err != nil {
		return Loop{}, fmt.Errorf("pick downlink loop: %w", err)
	}
	return Loop{d: d}, nil
}
