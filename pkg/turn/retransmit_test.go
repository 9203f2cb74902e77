package turn_test

import (
	"slices"
	"testing"
	"time"

	"github.com/pion/stun/v4"
)

// TestRetransmittedAllocateKeepsToken holds RFC 8656 §7.2 step 2's "same
// success" for an Allocate that reserved: the retransmission's answer
// carries the same RESERVATION-TOKEN, without which the client could never
// redeem the port held for it.
func TestRetransmittedAllocateKeepsToken(t *testing.T) {
	e := newEnv(t)
	pkt := e.build(t, stun.MethodAllocate, aliceUser(), transportUDP(), rawAttr(stun.AttrEvenPort, 0x80))
	first := e.do(t, client(1), pkt)
	again := e.do(t, client(1), pkt)
	a, errA := first.Get(stun.AttrReservationToken)
	b, errB := again.Get(stun.AttrReservationToken)
	if errA != nil || errB != nil || !slices.Equal(a, b) {
		t.Errorf("tokens %x (%v), then %x (%v)", a, errA, b, errB)
	}
	if got, want := attrTypes(again), attrTypes(first); !slices.Equal(got, want) {
		t.Errorf("retransmission's attributes %v, first %v", got, want)
	}
}

// TestRetransmittedAllocateAlongside: a retransmission served while the
// first Allocate is still opening its relay (two readers of one socket)
// loses the insert race; it is still the same request, and gets the
// success the winner got (RFC 8656 §7.2 step 2), not 437.
func TestRetransmittedAllocateAlongside(t *testing.T) {
	e := newEnv(t)
	c, l := udpClient(1)
	pkt := e.build(t, stun.MethodAllocate, aliceUser(), transportUDP())
	e.relays.onOpen = func() { e.h.Serve(pkt, c) } // the retransmission, served inside the first's Open
	e.h.Serve(pkt, c)
	got := l.take()
	if len(got) != 2 {
		t.Fatalf("%d answers, want 2", len(got))
	}
	var relayed [][]byte
	for _, b := range got {
		m := &stun.Message{Raw: b}
		if err := m.Decode(); err != nil {
			t.Fatal(err)
		}
		if !isCode(m, 0) {
			t.Fatalf("answered %v, want the success twice", attrTypes(m))
		}
		v, _ := m.Get(stun.AttrXORRelayedAddress)
		relayed = append(relayed, v)
	}
	if !slices.Equal(relayed[0], relayed[1]) || e.table.Count() != 1 {
		t.Errorf("relayed %x and %x, table counts %d", relayed[0], relayed[1], e.table.Count())
	}
}

// TestRetransmissionPastTheDeadline: a retransmitted Allocate answered
// after its allocation's deadline passed but before Expire ran reports a
// LIFETIME of 0, not the time left wrapped round to 136 years.
func TestRetransmissionPastTheDeadline(t *testing.T) {
	e := newEnv(t)
	pkt := e.build(t, stun.MethodAllocate, aliceUser(), transportUDP())
	e.do(t, client(1), pkt)
	e.clock.Advance(e.policy.DefaultLifetime + 2*time.Second)
	if got := lifetimeOf(t, e.do(t, client(1), pkt)); got != 0 {
		t.Errorf("LIFETIME %v past the deadline", got)
	}
}
