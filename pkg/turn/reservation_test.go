package turn_test

import (
	"slices"
	"testing"
	"time"

	"github.com/pion/stun/v4"

	"github.com/turnd/turnd/internal/bindings"
)

// TestReservedIPv6Port holds EVEN-PORT R=1 on an IPv6 allocation: the
// held port is an IPv6 one, so its token redeems for IPv6 and an unused
// one releases the IPv6 port.
func TestReservedIPv6Port(t *testing.T) {
	e := newEnv(t)
	v6 := rawAttr(stun.AttrRequestedAddressFamily, 2, 0, 0, 0)
	token, err := e.allocate(t, client(1), v6, rawAttr(stun.AttrEvenPort, 0x80)).Get(stun.AttrReservationToken)
	if err != nil {
		t.Fatal(err)
	}
	resp := e.allocate(t, client(2), rawAttr(stun.AttrReservationToken, token...))
	if got := relayedOf(t, resp); len(got) != 1 || got[0].Addr() != relay6 || got[0].Port() != 50001 {
		t.Errorf("the token gave %v, want [%v]:50001", got, relay6)
	}
	if w := e.relays.opened[1]; w.Families != bindings.V6 || w.Port != 50001 {
		t.Errorf("relay asked %+v for the token", w)
	}
}

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

// TestReservationTokenOfAnotherUser holds a RESERVATION-TOKEN to its user:
// another user presenting it is refused 508 (RFC 8656 §7.2 step 5, a token
// not valid for it), and the token stays its owner's.
func TestReservationTokenOfAnotherUser(t *testing.T) {
	e := newEnv(t)
	token, err := e.allocate(t, client(1), rawAttr(stun.AttrEvenPort, 0x80)).Get(stun.AttrReservationToken)
	if err != nil {
		t.Fatal(err)
	}
	stolen := e.do(t, client(2), e.build(t, stun.MethodAllocate, carolUser(), transportUDP(), rawAttr(stun.AttrReservationToken, token...)))
	if !isCode(stolen, 508) {
		t.Fatalf("another user's token answered %v", attrTypes(stolen))
	}
	if resp := e.allocate(t, client(3), rawAttr(stun.AttrReservationToken, token...)); relayedOf(t, resp)[0].Port() != 50001 {
		t.Errorf("the owner's token gave %v", relayedOf(t, resp))
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
