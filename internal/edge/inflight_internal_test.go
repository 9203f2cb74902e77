package edge

import "testing"

func TestInFlightQuiesceIdle(t *testing.T) {
	f := newInFlight()
	n, answered := f.quiesce()
	if n != 0 || !isClosed(answered) {
		t.Fatalf("quiesce with nothing in flight: %d pending, answered closed %v; want 0, true", n, isClosed(answered))
	}
	if f.begin() {
		t.Error("begin after quiesce handed a message to pion")
	}
}

// TestInFlightQuiesceWaits follows two readers through a quiesce: the
// channel closes when the last message pion holds is answered, not before,
// and a reader's second hand-over of one message counts once.
func TestInFlightQuiesceWaits(t *testing.T) {
	f := newInFlight()
	var a, b handing
	if !a.hand(f) || !a.hand(f) || !b.hand(f) {
		t.Fatal("hand refused before quiesce")
	}
	n, answered := f.quiesce()
	if n != 2 {
		t.Fatalf("quiesce: %d pending, want 2 (reader a handed one message twice)", n)
	}
	if a.hand(f) {
		t.Error("hand accepted after quiesce")
	}
	a.back(f)
	a.back(f) // a reader closing after pion came back: no second end
	if isClosed(answered) {
		t.Fatal("answered closed with reader b's message still with pion")
	}
	b.back(f)
	if !isClosed(answered) {
		t.Fatal("answered still open after every message came back")
	}
}

func isClosed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}
