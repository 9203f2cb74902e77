package edge

import (
	"sync"
	"sync/atomic"
)

// inFlight counts the client messages pion is handling, so that closing
// the server can wait for their answers. pion answers a request only after
// acting on it: a Refresh with lifetime 0 deletes the allocation first and
// writes its 200 after. When that was the last allocation of a drain, the
// process closes its sockets the moment the deletion is counted; without
// this wait the client's last answer raced the close and often lost (a TCP
// client read EOF where its 200 should have been).
//
// A socket's reader begins when it hands pion a message and ends when pion
// comes back for the next one (pion handles a socket's messages one at a
// time, on the goroutine that reads it).
type inFlight struct {
	// state is the count in its low bits, and closingBit once quiesce has
	// begun: from then on no message is handed to pion.
	state    atomic.Int64
	idle     chan struct{} // closed when the count reaches zero after closingBit
	idleOnce sync.Once
}

const closingBit = int64(1) << 62

func newInFlight() *inFlight { return &inFlight{idle: make(chan struct{})} }

// begin counts a message about to be handed to pion; false once quiesce has
// begun, and the message must not be handed over.
func (f *inFlight) begin() bool {
	for {
		s := f.state.Load()
		if s&closingBit != 0 {
			return false
		}
		if f.state.CompareAndSwap(s, s+1) {
			return true
		}
	}
}

// end is pion coming back from a message begin counted.
func (f *inFlight) end() {
	if f.state.Add(-1) == closingBit {
		f.idleOnce.Do(func() { close(f.idle) })
	}
}

// quiesce stops handing messages to pion; it returns how many pion holds
// and a channel closed once it has answered them.
func (f *inFlight) quiesce() (int, <-chan struct{}) {
	n := int(f.state.Or(closingBit) &^ closingBit)
	if n == 0 {
		f.idleOnce.Do(func() { close(f.idle) })
	}
	return n, f.idle
}

// handing marks one reader (a UDP socket, a client connection) as having
// handed pion a message it has not come back from.
type handing struct{ on atomic.Bool }

// hand counts a message for pion; false if the edge is quiescing.
func (h *handing) hand(f *inFlight) bool {
	if !f.begin() {
		return false
	}
	if h.on.Swap(true) { // never two at once on one reader; keep the count exact anyway
		f.end()
	}
	return true
}

// back is pion returning for the next message, or the reader closing.
func (h *handing) back(f *inFlight) {
	if h.on.Swap(false) {
		f.end()
	}
}

// Quiesce stops handing client messages to pion. It returns how many pion
// is handling and a channel closed once they are answered: close the server
// after that, and a request whose answer the close would otherwise lose (see
// inFlight) gets it. Relayed data keeps flowing; requests that arrive from
// now on go unanswered, as they would a moment later with the sockets closed.
func (e *Edge) Quiesce() (pending int, answered <-chan struct{}) { return e.flight.quiesce() }
