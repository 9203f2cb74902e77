package edge

import (
	"context"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/turnd/turnd/internal/mmsg"
)

// ownPlane is what the edge keeps of the readers it runs for the own
// control plane: enough to stop them all and to report one that died.
// Entries come and go with sockets and connections, never per packet.
type ownPlane struct {
	mu       sync.Mutex
	stopping bool
	halted   atomic.Bool // stopping, for the lanes' look per datagram
	lanes    map[*mmsg.Socket]*laneState
	conns    map[*clientConn]struct{}
	accepts  map[net.Listener]*acceptState
	// hold is Pause's state (pause.go), under mu.
	hold holdState
	// readers counts the goroutines inside a lane's or a connection's
	// message loop, and Stop's waits for a relay loop to let go of a
	// connection; drained, once Stop waits, is closed when it reaches 0.
	readers int
	drained chan struct{}

	stopped  chan struct{} // closed by Stop
	failed   chan error    // the first reader or accept loop that died
	failOnce sync.Once

	idle    atomic.Int64  // limits.idle_connection_timeout in nanoseconds; 0: none
	dropped atomic.Uint64 // answers dropped on a full outbox
}

// past is a read deadline that has passed: it wakes a blocked reader.
var past = time.Unix(1, 0)

func newOwnPlane() ownPlane {
	return ownPlane{stopped: make(chan struct{}), failed: make(chan error, 1),
		lanes: map[*mmsg.Socket]*laneState{}, conns: map[*clientConn]struct{}{},
		accepts: map[net.Listener]*acceptState{}}
}

// SetIdleTimeout sets limits.idle_connection_timeout for the own plane's
// streams (0: none). It applies to connections from their next Idle(true)
// or accept; a reload calls it.
func (e *Edge) SetIdleTimeout(d time.Duration) { e.own.idle.Store(int64(d)) }

// DroppedAnswers counts the messages Stream.Write dropped because a
// client's outbox was full (downlink frames TryWritev refuses are the
// caller's to count).
func (e *Edge) DroppedAnswers() uint64 { return e.own.dropped.Load() }

// Failed delivers the error of the first UDP reader or stream accept loop
// of the own plane that stopped before Stop: that address no longer
// answers, so the process should stop rather than look healthy.
func (e *Edge) Failed() <-chan error { return e.own.failed }

// fail records err unless Stop caused it.
func (e *Edge) fail(err error) {
	if e.stopping() {
		return
	}
	e.own.failOnce.Do(func() { e.own.failed <- err })
}

func (e *Edge) stopping() bool {
	e.own.mu.Lock()
	defer e.own.mu.Unlock()
	return e.own.stopping
}

// Stop stops every reader of the own plane and lets the last answers out:
// each reader is woken (a read deadline in the past, or taken out of its
// relay loop) and returns after the message in hand, whose answer it wrote
// inline; then Stop waits until every answer a connection had queued is
// written, or ctx ends (its error is returned). Relayed data keeps flowing:
// the sockets stay open until Sockets.Close. New connections are closed
// on accept from now on.
func (e *Edge) Stop(ctx context.Context) error {
	e.own.mu.Lock()
	if !e.own.stopping {
		e.own.stopping = true
		e.own.halted.Store(true)
		close(e.own.stopped)
	}
	lanes := make([]*mmsg.Socket, 0, len(e.own.lanes))
	for s := range e.own.lanes {
		lanes = append(lanes, s)
	}
	conns := make([]*clientConn, 0, len(e.own.conns))
	for c := range e.own.conns {
		conns = append(conns, c)
	}
	e.own.mu.Unlock()

	for _, s := range lanes {
		_ = s.SetReadDeadline(past) // a closed socket's reader is returning anyway
	}
	for _, c := range conns {
		if c.halt(past) {
			// In a relay loop: it lets go of the connection once the
			// message in hand is served. One goroutine each, so that ctx
			// bounds the wait.
			e.own.mu.Lock()
			e.own.readers++
			e.own.mu.Unlock()
			go func() {
				c.unwatch()
				e.leaveReader()
			}()
		}
	}
	e.own.mu.Lock()
	var drained chan struct{}
	if e.own.readers > 0 {
		if e.own.drained == nil {
			e.own.drained = make(chan struct{})
		}
		drained = e.own.drained
	}
	e.own.mu.Unlock()
	if drained != nil {
		if err := await(ctx, drained); err != nil {
			return err
		}
	}
	for _, c := range conns {
		if err := c.waitWritten(ctx); err != nil {
			return err
		}
	}
	return nil
}

// await waits for done or the end of ctx (its error), looking at ctx only
// when done is not closed yet.
func await(ctx context.Context, done <-chan struct{}) error {
	select {
	case <-done:
		return nil
	default:
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// addLane registers a lane's reader; false once Stop has begun.
func (e *Edge) addLane(s *mmsg.Socket) bool {
	e.own.mu.Lock()
	defer e.own.mu.Unlock()
	if e.own.stopping {
		return false
	}
	st := &laneState{}
	e.own.lanes[s] = st
	e.own.readers++
	if e.own.hold.paused {
		// Served while paused: it must not read until Resume.
		st.waitEpoch = e.expectLocked()
		_ = s.SetReadDeadline(past)
	}
	return true
}

func (e *Edge) dropLane(s *mmsg.Socket) {
	e.own.mu.Lock()
	if st := e.own.lanes[s]; st != nil {
		e.arriveLocked(&st.waitEpoch)
	}
	delete(e.own.lanes, s)
	e.own.mu.Unlock()
	e.leaveReader()
}

// addConn registers a connection; false once Stop has begun.
func (e *Edge) addConn(c *clientConn) bool {
	e.own.mu.Lock()
	defer e.own.mu.Unlock()
	if e.own.stopping {
		return false
	}
	if e.own.hold.paused {
		c.hold.Store(true) // not shared yet: its reader parks before it reads
	}
	e.own.conns[c] = struct{}{}
	return true
}

func (e *Edge) dropConn(c *clientConn) {
	e.own.mu.Lock()
	delete(e.own.conns, c)
	e.own.mu.Unlock()
}

// enterReader counts a goroutine entering a connection's message loop;
// false once Stop has begun (the loop must not start).
func (e *Edge) enterReader() bool {
	e.own.mu.Lock()
	defer e.own.mu.Unlock()
	if e.own.stopping {
		return false
	}
	e.own.readers++
	return true
}

// leaveReader counts a reader out, waking Stop at the last.
func (e *Edge) leaveReader() {
	e.own.mu.Lock()
	defer e.own.mu.Unlock()
	if e.own.readers--; e.own.readers == 0 && e.own.drained != nil {
		close(e.own.drained)
		e.own.drained = nil
	}
}
