package edge

import (
	"time"
)

// A hand-over parks RFC 6062 pipes as it parks readers (pause.go): each
// direction's read is interrupted by a deadline in the past, the bytes it
// returned are written, and the direction waits. Then no byte is in this
// process, so the data connection and its peer connection can go to a
// successor (Export, Release) or flow on here (Resume).

// pipeState is a data connection's pipe; under clientConn.mu.
type pipeState struct {
	live   [2]bool       // the directions copying or parked (runPipe: both)
	done   chan struct{} // closed once either direction ended
	held   bool          // Pause parks both directions
	epochs [2]uint64     // Pause waits for each direction to park
	wake   chan struct{} // closed when held ends (Resume, Release)
	moved  bool          // Release: the directions return and close nothing
}

// pipeNext is what a parked direction does once woken.
type pipeNext int

const (
	pipeOn pipeNext = iota
	pipeMoved
	pipeEnded
)

// readDeadliner is a peer connection whose reads Pause can interrupt.
type readDeadliner interface{ SetReadDeadline(time.Time) error }

// holdPipeLocked is Pause for a data connection: both directions park
// after the write in hand. A pipe not started yet (its ConnectionBind is
// being served) starts parked. Called with c.mu held.
func (c *clientConn) holdPipeLocked() {
	p := &c.ps
	if p.held {
		return
	}
	started := p.done != nil
	if started && !p.live[pipeUp] && !p.live[pipeDown] {
		return // ended
	}
	p.held, p.wake = true, make(chan struct{})
	c.e.own.mu.Lock()
	for dir := range p.epochs {
		if !started || p.live[dir] {
			p.epochs[dir] = c.e.expectPipeLocked()
		}
	}
	c.e.own.mu.Unlock()
	c.pipeDeadlinesLocked(past)
}

// pipeDeadlinesLocked sets both sides' read deadlines. Called with c.mu held.
func (c *clientConn) pipeDeadlinesLocked(t time.Time) {
	_ = c.conn.SetReadDeadline(t)
	if d, ok := c.pipe.(readDeadliner); ok {
		_ = d.SetReadDeadline(t)
	}
}

// pipeArrivedLocked counts direction dir parked for the Pause that waits
// for it. Called with c.mu held.
func (c *clientConn) pipeArrivedLocked(dir int) {
	if c.ps.epochs[dir] != 0 {
		c.e.own.mu.Lock()
		c.e.arrivePipeLocked(&c.ps.epochs[dir])
		c.e.own.mu.Unlock()
	}
}

// parkPipe parks direction dir, whose read a Pause's deadline
// interrupted, until Resume (pipeOn), Release (pipeMoved), or the pipe's
// end or Stop (pipeEnded). A deadline a Resume has already lifted reads on.
func (c *clientConn) parkPipe(dir int) pipeNext {
	c.mu.Lock()
	defer c.mu.Unlock()
	for c.ps.held && !c.ps.moved {
		c.pipeArrivedLocked(dir)
		wake, done := c.ps.wake, c.ps.done
		c.mu.Unlock()
		select {
		case <-wake:
		case <-done:
		case <-c.e.own.stopped:
		}
		c.mu.Lock()
		select {
		case <-done:
			return pipeEnded
		case <-c.e.own.stopped:
			return pipeEnded
		default:
		}
	}
	if c.ps.moved {
		return pipeMoved
	}
	return pipeOn
}

// unholdPipe is Resume for a data connection: the deadlines are lifted
// before the directions wake, so their next reads wait for bytes again.
func (c *clientConn) unholdPipe() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.ps.held || c.ps.moved {
		return
	}
	c.ps.held = false
	c.ps.epochs = [2]uint64{}
	c.pipeDeadlinesLocked(time.Time{})
	close(c.ps.wake)
}

// releasePipe lets a moved pipe's directions return without closing
// either side; the caller then drops the connection (leave).
func (c *clientConn) releasePipe() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ps.moved {
		return
	}
	c.ps.moved = true
	if c.ps.held {
		close(c.ps.wake)
	}
}
