package relay

import (
	"context"
	"fmt"
)

// Pausing the downlink, for a hand-over (docs/handover.md): each datagram
// must be read by exactly one process, so the old one stops reading its
// relay sockets before their descriptors go to the new one, and what
// arrives meanwhile waits in the kernel's queues.

// Pause stops every downlink loop from reading: each finishes the round in
// hand, writes what it read to the lanes and streams (nothing read is
// dropped) and parks. It returns once all are parked; a loop that has not
// started, or that waits for readiness holding nothing, counts as parked
// at once, and loops started while paused start parked. If ctx ends first
// it returns ctx's error and the loops still running park later: the
// caller then calls Resume.
//
// The loops also call the edge's ready functions of the plain TCP
// connections they read (Loop.Watch): those stop too. The uplink
// (RelayFor, RelayStreamFor) is not paused here: it runs on the edge's
// readers, which the edge pauses itself.
func (rl *Relay) Pause(ctx context.Context) error {
	rl.kernelPause()
	rl.pauseMu.Lock()
	if !rl.paused {
		rl.resumed = make(chan struct{})
	}
	rl.paused = true
	rl.pauseGen++
	gen := rl.pauseGen
	waits := make([]<-chan struct{}, 0, len(rl.loops))
	for _, d := range rl.loops {
		waits = append(waits, d.pause())
	}
	rl.pauseMu.Unlock()
	for _, parked := range waits {
		select {
		case <-parked:
		case <-ctx.Done():
			return fmt.Errorf("pause relay: %w", ctx.Err())
		}
	}
	rl.pauseMu.Lock()
	defer rl.pauseMu.Unlock()
	if rl.paused && rl.pauseGen == gen { // no Resume came meanwhile
		rl.settled = true
	}
	return nil
}

// Resume lets every downlink loop read again, at once: what arrived while
// paused is read in the next round.
func (rl *Relay) Resume() {
	rl.pauseMu.Lock()
	defer rl.pauseMu.Unlock()
	rl.paused, rl.settled = false, false
	for _, d := range rl.loops {
		d.resume()
	}
	rl.unlend()
	if rl.resumed != nil {
		close(rl.resumed)
		rl.resumed = nil
	}
	rl.kernelResume()
}

// awaitResume waits while the relay is paused (or until it closes): a
// Connect whose dial ends meanwhile holds its peer connection and answers
// only after Resume, so that nothing is written to a control connection
// a successor may be serving, and a route released meanwhile refuses it.
func (rl *Relay) awaitResume() {
	rl.pauseMu.Lock()
	resumed := rl.resumed
	rl.pauseMu.Unlock()
	if resumed == nil {
		return
	}
	select {
	case <-resumed:
	case <-rl.closed:
	}
}

// isSettled reports whether the relay is paused and every loop has parked:
// no socket is read, so its descriptor may go to another process.
func (rl *Relay) isSettled() bool {
	rl.pauseMu.Lock()
	defer rl.pauseMu.Unlock()
	return rl.settled
}

// pause asks the loop to park and returns what is closed once it has.
func (d *downlink) pause() <-chan struct{} {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.paused {
		d.paused = true
		d.parked = make(chan struct{})
		if d.idle || d.closed {
			close(d.parked)
		}
	}
	return d.parked
}

// resume lets the loop read again.
func (d *downlink) resume() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.paused, d.parked = false, nil
	d.wake.Broadcast()
}

// signalParked tells Pause that the loop holds nothing and reads no more.
// Called with mu held.
func (d *downlink) signalParked() {
	if d.parked == nil {
		return
	}
	select {
	case <-d.parked:
	default:
		close(d.parked)
	}
}

// awaitResume waits, with mu held and outside any round, while the loop is
// paused and open.
func (d *downlink) awaitResume() {
	for d.paused && !d.closed {
		d.idle = true
		d.signalParked()
		d.wake.Wait()
	}
}
