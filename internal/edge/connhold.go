package edge

import "time"

// holdFor is Pause for this connection: its reader parks after the frame
// in hand, wherever it runs. A reader in flight is waited for (expected):
// a goroutine's, woken from its read by a deadline in the past; a relay
// loop's, taken out of the loop on a goroutine of its own, since Unwatch
// waits for the message in hand; one that serves what it left behind off
// the loop (kick, resumeReading). A pipe's two directions park after the
// write in hand (pipehold.go); a TLS connection still in its handshake
// parks when it is done.
func (c *clientConn) holdFor() {
	c.mu.Lock()
	if c.pipe != nil && !c.closing {
		c.holdPipeLocked()
		c.mu.Unlock()
		return
	}
	if c.closing || c.stopped {
		c.mu.Unlock()
		return
	}
	c.hold.Store(true)
	var unwatch, deadline bool
	var epoch uint64
	switch {
	case c.looped && c.watching:
		c.unwatching, unwatch = true, true
		c.e.own.mu.Lock()
		epoch = c.e.expectLocked()
		c.e.own.mu.Unlock()
	case c.inReader && !c.parkedR, c.looped && c.serving:
		deadline = c.inReader
		c.e.own.mu.Lock()
		c.waitEpoch = c.e.expectLocked()
		c.e.own.mu.Unlock()
	}
	c.mu.Unlock()
	if deadline {
		_ = c.conn.SetReadDeadline(past)
	}
	if unwatch {
		go func() {
			c.reactor.Unwatch(c.raw.Fd())
			c.mu.Lock()
			c.watching, c.unwatching = false, false
			held := c.hold.Load()
			c.mu.Unlock()
			c.e.arrive(&epoch)
			if !held { // Resume came first: back to the loop
				c.kick()
			}
		}()
	}
}

// unhold is Resume for this connection: a parked goroutine reader is
// woken, a connection parked out of its relay loop served and handed back.
func (c *clientConn) unhold() {
	c.mu.Lock()
	if !c.hold.Load() {
		c.mu.Unlock()
		return
	}
	goroutine := c.inReader
	c.mu.Unlock()
	if goroutine {
		_ = c.conn.SetReadDeadline(time.Time{})
	}
	c.mu.Lock()
	c.hold.Store(false)
	c.waitEpoch = 0
	kick := c.looped && !c.watching && !c.unwatching && !c.serving && !c.paused && c.pipe == nil
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
	if kick {
		c.kick()
	}
}

// kick serves the frames a parked (or newly adopted) connection holds in
// buf, then hands it to its relay loop: a frame already read must not wait
// for the client's next bytes, which a loop only reads when they come.
func (c *clientConn) kick() {
	c.mu.Lock()
	if c.closing || c.stopped || c.hold.Load() || !c.looped || c.serving || c.watching || c.paused {
		c.mu.Unlock()
		return
	}
	c.serving = true
	c.mu.Unlock()
	var none error
	if c.serve(&none, false) == readOn && !c.watch() {
		go c.readLoop()
	}
}

// arrived counts the connection's reader parked for the Pause that waits
// for it, if one does (no edge lock otherwise: it runs whenever a reader
// stops). Called with c.mu held.
func (c *clientConn) arrived() {
	if c.waitEpoch != 0 {
		c.e.arrive(&c.waitEpoch)
	}
}
