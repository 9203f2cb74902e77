package edge

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"
)

// holdState is Pause's bookkeeping, under ownPlane.mu. Every reader that
// Pause must see parked is expected (active++) and arrives once when it
// parks; an arrival of an earlier Pause (epoch) counts for nothing, so a
// Pause whose ctx ended leaves no debt for the next one.
type holdState struct {
	paused bool
	ok     bool   // the last Pause saw every reader parked and every answer written
	epoch  uint64 // moves on with every Pause and Resume
	active int
	parked chan struct{} // closed when active reaches 0; nil: nobody waits
	// pipes and pipesParked are active and parked for the directions of
	// RFC 6062 pipes, which Pause waits for only a moment (pipeGrace).
	pipes       int
	pipesParked chan struct{}
	// resumed is closed by Resume: the lanes and accept loops parked on it
	// read again.
	resumed chan struct{}
	// exported are the sockets the last Export duplicated: Resume makes
	// them non-blocking again (a successor's os.File.Fd clears O_NONBLOCK
	// on the file description both processes share).
	exported *moved
}

// laneState is one lane's, under ownPlane.mu.
type laneState struct {
	waitEpoch uint64 // Pause waits for this lane to park
	released  bool   // moved to a successor: the lane returns
}

// acceptState is one ServeStreams accept loop's, under ownPlane.mu.
type acceptState struct {
	ln        net.Listener
	waitEpoch uint64
	released  bool
}

// acceptHolder is a listener whose Accept Pause can interrupt and Resume
// let go again: every listener Bind and Adopt make is one.
type acceptHolder interface {
	holdAccept(on bool)
}

// expectLocked counts one more reader Pause waits for and returns the
// epoch it must arrive with. Called with ownPlane.mu held.
func (e *Edge) expectLocked() uint64 {
	e.own.hold.active++
	return e.own.hold.epoch
}

// arriveLocked counts a reader parked, once: *ep is cleared. Called with
// ownPlane.mu held.
func (e *Edge) arriveLocked(ep *uint64) {
	h := &e.own.hold
	if *ep != 0 && *ep == h.epoch && h.paused {
		if h.active--; h.active == 0 && h.parked != nil {
			close(h.parked)
			h.parked = nil
		}
	}
	*ep = 0
}

// expectPipeLocked is expectLocked for a direction of a pipe.
func (e *Edge) expectPipeLocked() uint64 {
	e.own.hold.pipes++
	return e.own.hold.epoch
}

// arrivePipeLocked is arriveLocked for a direction of a pipe.
func (e *Edge) arrivePipeLocked(ep *uint64) {
	h := &e.own.hold
	if *ep != 0 && *ep == h.epoch && h.paused {
		if h.pipes--; h.pipes == 0 && h.pipesParked != nil {
			close(h.pipesParked)
			h.pipesParked = nil
		}
	}
	*ep = 0
}

// pipeGrace is how long Pause waits for the pipes to park: a direction
// blocked writing to a client or a peer that stopped reading must not hold
// every other client's traffic; such a pipe stays with this process
// (ExportPipes takes only parked ones).
const pipeGrace = 200 * time.Millisecond

// arrive is arriveLocked taking the lock.
func (e *Edge) arrive(ep *uint64) {
	e.own.mu.Lock()
	defer e.own.mu.Unlock()
	e.arriveLocked(ep)
}

// Pause stops every reader of the own plane, reversibly, so that another
// process can take the sockets over: each lane serves the rest of the
// recvmmsg batch in hand and parks; each accept loop (and a shared port's
// or PROXY port's sorting goroutine) stops accepting, the kernel queueing
// new connections; each stream reader parks after the frame in hand,
// leaving the unframed bytes in its buffer, and a connection a relay loop
// reads is taken out of the loop but stays open; each direction of an RFC
// 6062 pipe parks after writing what its read returned (pipehold.go).
// Then Pause waits until every reader is parked and every queued answer
// written, or ctx ends (its error: the caller then calls Resume). Nothing
// is closed. Pause while paused or stopping is an error.
func (e *Edge) Pause(ctx context.Context) error {
	e.own.mu.Lock()
	switch {
	case e.own.stopping:
		e.own.mu.Unlock()
		return fmt.Errorf("pause: %w", ErrStopping)
	case e.own.hold.paused:
		e.own.mu.Unlock()
		return fmt.Errorf("pause: %w", ErrPaused)
	}
	for ln := range e.own.accepts {
		if _, ok := ln.(acceptHolder); !ok {
			e.own.mu.Unlock()
			return fmt.Errorf("pause: accept loop on %T cannot be paused: %w", ln, errors.ErrUnsupported)
		}
	}
	h := &e.own.hold
	h.paused, h.ok = true, false
	h.epoch++
	h.resumed = make(chan struct{})
	for s, st := range e.own.lanes {
		st.waitEpoch = e.expectLocked()
		_ = s.SetReadDeadline(past) // a closed socket's reader is returning anyway
	}
	ports := map[*sortingPort]bool{}
	for ln, a := range e.own.accepts {
		a.waitEpoch = e.expectLocked()
		ln.(acceptHolder).holdAccept(true)
		if sl, ok := ln.(*sortedListener); ok && !ports[sl.port] {
			ports[sl.port] = true
			epoch := e.expectLocked()
			if !sl.port.hold(func() { e.arrive(&epoch) }) {
				e.arriveLocked(&epoch) // its goroutine has ended: nothing to wait for
			}
		}
	}
	conns := e.connsLocked()
	e.own.mu.Unlock()

	for _, c := range conns {
		c.holdFor()
	}
	e.own.mu.Lock()
	var parked chan struct{}
	if h.active > 0 {
		h.parked = make(chan struct{})
		parked = h.parked
	}
	e.own.mu.Unlock()
	if parked != nil {
		if err := await(ctx, parked); err != nil {
			return fmt.Errorf("pause: readers still serving: %w", err)
		}
	}
	e.own.mu.Lock()
	var pipes chan struct{}
	if h.pipes > 0 {
		h.pipesParked = make(chan struct{})
		pipes = h.pipesParked
	}
	e.own.mu.Unlock()
	if pipes != nil {
		grace, cancel := context.WithTimeout(ctx, pipeGrace)
		_ = await(grace, pipes) // those still copying stay here
		cancel()
	}
	for _, c := range conns {
		// A TLS connection stays here, and a pipe writes its bytes itself
		// (pipeGrace): a client slow to read must not hold the hand-over.
		c.mu.Lock()
		piped := c.pipe != nil
		c.mu.Unlock()
		if c.client.TLS || piped {
			continue
		}
		if err := c.waitWritten(ctx); err != nil {
			return fmt.Errorf("pause: answers still queued: %w", err)
		}
	}
	e.own.mu.Lock()
	h.ok = h.paused
	e.own.mu.Unlock()
	return nil
}

// Resume lets every parked reader and accept loop read again and hands
// the connections back to their relay loops: after it the edge serves as
// before Pause. It does nothing unless paused.
func (e *Edge) Resume() { e.resume(nil) }

// resume is Resume after a Release has taken out what moved (lanes and
// accept loops marked released return instead of reading).
func (e *Edge) resume(gone *moved) {
	e.own.mu.Lock()
	h := &e.own.hold
	if !h.paused {
		e.own.mu.Unlock()
		return
	}
	if gone == nil && h.exported != nil {
		h.exported.nonblocking()
	}
	for s, st := range e.own.lanes {
		if !st.released {
			_ = s.SetReadDeadline(time.Time{})
		}
	}
	for ln, a := range e.own.accepts {
		if !a.released {
			ln.(acceptHolder).holdAccept(false)
			if sl, ok := ln.(*sortedListener); ok {
				sl.port.unhold()
			}
		}
	}
	h.paused, h.ok = false, false
	h.epoch++
	h.active, h.parked, h.exported = 0, nil, nil
	h.pipes, h.pipesParked = 0, nil
	close(h.resumed)
	conns := e.connsLocked()
	e.own.mu.Unlock()
	for _, c := range conns {
		c.unhold()
		c.unholdPipe()
	}
}

// connsLocked returns the own plane's connections. Called with mu held.
func (e *Edge) connsLocked() []*clientConn {
	conns := make([]*clientConn, 0, len(e.own.conns))
	for c := range e.own.conns {
		conns = append(conns, c)
	}
	return conns
}

// parkLane parks a lane whose read Pause interrupted until Resume, and
// reports whether it must return instead (Stop, or its socket moved).
func (e *Edge) parkLane(st *laneState) (leave bool) {
	e.own.mu.Lock()
	for e.own.hold.paused && !st.released {
		e.arriveLocked(&st.waitEpoch)
		resumed := e.own.hold.resumed
		e.own.mu.Unlock()
		select {
		case <-resumed:
		case <-e.own.stopped:
			return true
		}
		e.own.mu.Lock()
	}
	leave = st.released || e.own.stopping
	e.own.mu.Unlock()
	return leave
}

// addAccept registers an accept loop.
func (e *Edge) addAccept(ln net.Listener) *acceptState {
	e.own.mu.Lock()
	defer e.own.mu.Unlock()
	a := &acceptState{ln: ln}
	e.own.accepts[ln] = a
	if h, ok := ln.(acceptHolder); ok && e.own.hold.paused {
		a.waitEpoch = e.expectLocked()
		h.holdAccept(true)
	}
	return a
}

func (e *Edge) dropAccept(a *acceptState) {
	e.own.mu.Lock()
	defer e.own.mu.Unlock()
	e.arriveLocked(&a.waitEpoch)
	delete(e.own.accepts, a.ln)
}

// parkAccept parks an accept loop Pause interrupted until Resume, and
// reports whether its listener moved to a successor.
func (e *Edge) parkAccept(a *acceptState) (released bool) {
	e.own.mu.Lock()
	for e.own.hold.paused && !a.released && !e.own.stopping {
		e.arriveLocked(&a.waitEpoch)
		resumed := e.own.hold.resumed
		e.own.mu.Unlock()
		select {
		case <-resumed:
		case <-e.own.stopped:
		}
		e.own.mu.Lock()
	}
	released = a.released
	e.own.mu.Unlock()
	return released
}
