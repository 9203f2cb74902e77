package turn_test

import (
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/pion/stun/v4"

	"github.com/turnd/turnd/pkg/allocation"
)

// TestEnded: an allocation that expires on the table's fake clock leaves
// through the handler's Ended hook: its relay sockets close, its stream
// client is idle again, and the usage record is reported once; a token
// that expires unused releases its held port.
func TestEnded(t *testing.T) {
	e := newEnv(t)
	c, s := tcpClient(1)
	e.tcpAllocate(t, c)
	u, _ := udpClient(2)
	resp := e.allocate(t, u, rawAttr(stun.AttrEvenPort, 0x80))
	if !resp.Contains(stun.AttrReservationToken) {
		t.Fatal("no token")
	}
	e.table.Expire(t0.Add(allocation.ReservationLifetime))
	if !slices.Equal(e.relays.unheld, []int{50003}) {
		t.Errorf("unheld %v, want the reserved partner port", e.relays.unheld)
	}
	e.table.Expire(t0.Add(10 * time.Minute))
	if got := e.events.endings(); len(got) != 2 || got[0] != "alice expired" || got[1] != "alice expired" {
		t.Fatalf("endings %q, want two expiries", got)
	}
	closed := slices.Clone(e.relays.closed)
	slices.Sort(closed)
	if !slices.Equal(closed, []string{"50000 3", "50000 3"}) {
		t.Errorf("relay closed %q, want both allocations' sockets", closed)
	}
	if !slices.Equal(s.idle, []bool{false, true}) {
		t.Errorf("Idle calls %v, want busy then idle", s.idle)
	}
}

// TestPeerArrived: RFC 6062 §5.3 — a peer connecting to an RFC 6062
// relayed address is accepted only with a permission; then the client is
// sent a ConnectionAttempt indication with CONNECTION-ID and
// XOR-PEER-ADDRESS, and the connection is recorded for its ConnectionBind.
func TestPeerArrived(t *testing.T) {
	e := newEnv(t)
	c, _ := tcpClient(1)
	e.tcpAllocate(t, c)
	a, _ := e.table.Get(c.Tuple)
	peer := netip.MustParseAddrPort("192.0.2.1:40000")
	if _, ok := e.h.PeerArrived(a.Route, peer); ok || len(sent(c)) != 0 {
		t.Fatal("a peer without a permission was accepted")
	}
	if !isCode(e.do(t, c, e.build(t, stun.MethodCreatePermission, aliceUser(), peerAttr("192.0.2.1:1"))), 0) {
		t.Fatal("CreatePermission failed")
	}
	id, ok := e.h.PeerArrived(a.Route, peer)
	got := sent(c)
	if !ok || len(got) != 1 || got[0].Type != stun.NewType(stun.Method(0x000C), stun.ClassIndication) {
		t.Fatalf("accepted %v, sent %d messages", ok, len(got))
	}
	v, _ := got[0].Get(stun.AttrConnectionID)
	if len(v) != 4 || uint32(v[0])<<24|uint32(v[1])<<16|uint32(v[2])<<8|uint32(v[3]) != id {
		t.Errorf("CONNECTION-ID %x, want %d", v, id)
	}
	var x stun.XORMappedAddress
	if err := x.GetFromAs(got[0], stun.AttrXORPeerAddress); err != nil || x.Port != 40000 {
		t.Errorf("XOR-PEER-ADDRESS %v (%v)", x, err)
	}
	if _, p, bound, ok := e.table.Connection(id); !ok || bound || p != peer {
		t.Errorf("recorded %v, peer %v, bound %v", ok, p, bound)
	}
}
