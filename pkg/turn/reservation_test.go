package turn_test

import (
	"testing"

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
