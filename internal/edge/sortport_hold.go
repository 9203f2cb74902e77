package edge

import "net"

// Pause, Resume and Release of a sorting port: its accept goroutine parks
// while held, and once released returns, its sides serving what it had
// already taken.

// park waits while the port is held and reports whether to accept again
// (false: released).
func (p *sortingPort) park() bool {
	p.mu.Lock()
	for p.held && !p.released && !p.closing {
		parked := p.onParked
		p.onParked = nil
		wake := p.heldWake
		p.mu.Unlock()
		if parked != nil {
			parked()
		}
		<-wake
		p.mu.Lock()
	}
	again := !p.released
	p.mu.Unlock()
	return again
}

// hold stops the accept goroutine; parked is told once it is parked
// (never under the caller's locks: false means it will not be, since the
// goroutine has ended).
func (p *sortingPort) hold(parked func()) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.exited || p.released || p.closing {
		return false
	}
	p.held, p.onParked = true, parked
	if p.heldWake == nil {
		p.heldWake = make(chan struct{})
	}
	p.ln.holdAccept(true)
	return true
}

// unhold lets the accept goroutine accept again.
func (p *sortingPort) unhold() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.held || p.released {
		return
	}
	p.ln.holdAccept(false)
	p.held, p.onParked = false, nil
	p.wakeLocked()
}

func (p *sortingPort) wakeLocked() {
	if p.heldWake != nil {
		close(p.heldWake)
		p.heldWake = nil
	}
}

// release ends the accept goroutine for good (its socket moved) and closes
// this process's descriptor; what it had taken is still served.
func (p *sortingPort) release() error {
	p.mu.Lock()
	p.released = true
	p.wakeLocked()
	if p.inflight == 0 {
		close(p.drained)
	}
	p.mu.Unlock()
	return p.close()
}

// sorted counts a sorting goroutine out.
func (p *sortingPort) sorted() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.inflight--; p.inflight == 0 && p.released {
		close(p.drained)
	}
}

func (l *sortedListener) holdAccept(on bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case on && !l.held:
		l.held = true
		close(l.kick)
	case !on && l.held:
		l.held = false
		l.kick = make(chan struct{})
	}
}

// queued returns a connection the port had taken before Release, false
// once there are none left.
func (l *sortedListener) queued() (net.Conn, bool) {
	select {
	case c := <-l.ch:
		return c, true
	case <-l.port.drained:
		return nil, false
	case <-l.port.done:
		return nil, false
	}
}
