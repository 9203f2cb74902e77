package edge

// A plain TCP connection is read by a relay loop from accept (Reactor):
// the loop carries both directions of its clients, and a connection is
// read no faster than the loop writes its replies. The loop calls ready,
// which frames what it read and serves it inline, as the goroutine reader
// does; it leaves the loop's set only to pause for an answer that waits in
// the outbox, to become an RFC 6062 pipe, at Stop, or at its end.

// watch puts the connection in its reactor's set; false if the reactor
// refused it (it has stopped), and a goroutine must read it instead.
func (c *clientConn) watch() bool {
	c.watchMu.Lock()
	defer c.watchMu.Unlock()
	c.mu.Lock()
	if c.closing || c.stopped {
		c.mu.Unlock()
		return true // nobody reads it again
	}
	if c.hold.Load() {
		// Paused: out of the loop until Resume hands it back (kick).
		c.looped, c.watching = true, false
		c.arrived()
		c.mu.Unlock()
		return true
	}
	c.looped, c.watching = true, true
	c.mu.Unlock()
	if err := c.reactor.Watch(c.raw.Fd(), c.readyFn, c.releasedFn); err != nil {
		c.mu.Lock()
		c.looped, c.watching = false, false
		c.mu.Unlock()
		return false
	}
	return true
}

// ready runs on the reactor's goroutine whenever the connection is
// readable: one non-blocking read, then every complete frame served. false
// takes the connection out of the set.
//
// Hot path: one call per readable connection; no allocation, except to
// grow the buffer for a frame larger than it.
func (c *clientConn) ready() bool {
	c.mu.Lock()
	if c.closing || c.stopped || c.hold.Load() {
		c.watching = false
		c.mu.Unlock()
		return false
	}
	c.serving = true
	c.mu.Unlock()
	c.compact()
	n, err := c.raw.TryRead(c.buf[len(c.buf):min(cap(c.buf), len(c.buf)+reactorRead)])
	c.buf = c.buf[:len(c.buf)+n]
	next := c.serve(&err, true)
	return next == readOn
}

// released is the reactor stopping while it watched the connection: a
// goroutine reads it from now on.
func (c *clientConn) released() {
	c.mu.Lock()
	c.looped, c.watching = false, false
	gone := c.closing || c.stopped
	c.mu.Unlock()
	if !gone {
		go c.readLoop()
	}
}

// resumeReading lets a paused reader read again once its outbox is empty:
// it serves the frames the reader left in buf, then hands the connection
// back to its reactor or wakes its goroutine.
func (c *clientConn) resumeReading() {
	c.mu.Lock()
	if !c.paused || c.closing || c.stopped {
		c.mu.Unlock()
		return
	}
	c.paused = false
	if !c.looped {
		c.mu.Unlock()
		select {
		case c.resume <- struct{}{}:
		default:
		}
		return
	}
	if c.hold.Load() {
		c.mu.Unlock() // parked out of the loop: Resume hands it back
		return
	}
	c.serving = true
	c.mu.Unlock()
	var none error
	next := c.serve(&none, false)
	if next == readOn && !c.watch() {
		go c.readLoop()
	}
}
