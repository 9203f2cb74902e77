package allocation

import (
	"errors"
	"net/netip"
	"testing"
	"time"
)

// TestReservationsCountPerUser: a token counts against its user until it
// is taken or dropped; past MaxReservationsPerUser a user is refused while
// another is not; a token is taken once.
func TestReservationsCountPerUser(t *testing.T) {
	tab := New(Limits{}, Hooks{})
	var tokens [][8]byte
	for i := range MaxReservationsPerUser + 1 {
		a := insert(t, tab, "alice", tuple(uint16(i+1)), v4(uint16(2*i+50000)), time.Hour)
		tok, err := tab.Reserve(Reservation{Port: 2*i + 50001, User: "alice", Expires: t0.Add(ReservationLifetime), Holder: a.Tuple})
		if i == MaxReservationsPerUser {
			if !errors.Is(err, ErrReservationQuota) {
				t.Fatalf("token %d of alice: %v, want ErrReservationQuota", i+1, err)
			}
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		tokens = append(tokens, tok)
	}
	bob := insert(t, tab, "bob", tuple(100), v4(100), time.Hour)
	if _, err := tab.Reserve(Reservation{Port: 101, User: "bob", Expires: t0.Add(ReservationLifetime), Holder: bob.Tuple}); err != nil {
		t.Fatalf("bob refused while alice is at her cap: %v", err)
	}
	if _, err := tab.Reserve(Reservation{Port: 103, User: "bob", Expires: t0.Add(ReservationLifetime), Holder: bob.Tuple}); !errors.Is(err, ErrTokenInUse) {
		t.Fatalf("a second token held by one allocation: %v, want ErrTokenInUse", err)
	}
	r, ok := tab.TakeReservation(tokens[0][:], t0)
	if !ok || r.Port != 50001 || r.User != "alice" {
		t.Fatalf("take = %+v, %v", r, ok)
	}
	if _, ok := tab.TakeReservation(tokens[0][:], t0); ok {
		t.Fatal("a token was taken twice")
	}
	if n := tab.ReservationCount("alice"); n != MaxReservationsPerUser-1 {
		t.Fatalf("alice holds %d after one was taken, want %d", n, MaxReservationsPerUser-1)
	}
	if _, ok := tab.TakeReservation([]byte("short"), t0); ok {
		t.Fatal("a malformed token resolved")
	}
}

// TestReservationsExpireAndEndWithTheirHolder: an unused token leaves at
// its deadline and when the allocation holding its port ends, each time
// calling Unreserved so the port is released, and stops counting; a taken
// one does neither.
func TestReservationsExpireAndEndWithTheirHolder(t *testing.T) {
	ev, hooks := newEvents()
	tab := New(Limits{}, hooks)
	a := insert(t, tab, "a", tuple(1), v4(50000), time.Hour)
	b := insert(t, tab, "a", tuple(2), v4(50002), time.Hour)
	c := insert(t, tab, "a", tuple(3), v4(50004), time.Hour)
	exp := t0.Add(ReservationLifetime)
	ta, _ := tab.Reserve(Reservation{Port: 50001, User: "a", Expires: exp, Holder: a.Tuple})
	tb, _ := tab.Reserve(Reservation{Port: 50003, User: "a", Expires: exp, Holder: b.Tuple})
	tc, _ := tab.Reserve(Reservation{Port: 50005, User: "a", Expires: exp, Holder: c.Tuple})
	if _, ok := tab.TakeReservation(tc[:], t0); !ok {
		t.Fatal("take failed")
	}
	tab.End(b, EndReleased)
	got(t, ev.ended)
	if r := got(t, ev.unreserved); r.Token != tb || r.Port != 50003 {
		t.Fatalf("unreserved %+v when its holder ended, want b's", r)
	}
	if _, ok := tab.TakeReservation(tb[:], t0); ok {
		t.Fatal("an ended holder's token was taken")
	}
	if _, ok := tab.TakeReservation(ta[:], exp); ok {
		t.Fatal("a token was taken at its deadline")
	}
	tab.Expire(exp)
	if r := got(t, ev.unreserved); r.Token != ta {
		t.Fatalf("unreserved %+v at the deadline, want a's", r)
	}
	tab.End(c, EndReleased) // its token was taken: nothing to release
	got(t, ev.ended)
	ev.none(t, "after the holder of a taken token ended")
	if n := tab.ReservationCount("a"); n != 0 || len(tab.tokens) != 0 {
		t.Fatalf("%d tokens counted, %d held, want none", n, len(tab.tokens))
	}
	if _, err := tab.Reserve(Reservation{Port: 1, User: "a", Expires: exp, Holder: b.Tuple}); !errors.Is(err, ErrGone) {
		t.Fatalf("a reservation for an ended holder: %v, want ErrGone", err)
	}
}

// TestConnectionRecords: RFC 6062 — a peer connection gets a CONNECTION-ID
// unique in the table, a second to one peer is 446, ConnectionBind binds it
// once and within 30 s, and the allocation's end takes its records.
func TestConnectionRecords(t *testing.T) {
	ev, hooks := newEvents()
	tab := New(Limits{}, hooks)
	a := insert(t, tab, "a", tuple(1), v4(1), time.Hour)
	id, err := tab.AddConnection(a, peerA, t0, 2)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tab.AddConnection(a, netip.MustParseAddrPort("[::ffff:203.0.113.5]:4000"), t0, 2); !errors.Is(err, ErrConnectionExists) {
		t.Fatalf("a second connection to the peer: %v, want ErrConnectionExists", err)
	}
	id2, err := tab.AddConnection(a, peerB, t0, 2)
	if err != nil || id2 == id {
		t.Fatalf("second peer: id %d (first %d), %v", id2, id, err)
	}
	if _, err := tab.AddConnection(a, netip.MustParseAddrPort("203.0.113.9:1"), t0, 2); !errors.Is(err, ErrConnectionQuota) {
		t.Fatalf("a third connection past a cap of 2: %v, want ErrConnectionQuota", err)
	}
	bound, peer, err := tab.BindConnection(id, t0.Add(ConnectionBindTimeout-1))
	if err != nil || bound != a || peer != peerA {
		t.Fatalf("bind = %v, %v, %v", bound, peer, err)
	}
	if _, _, err := tab.BindConnection(id, t0); !errors.Is(err, ErrNoConnection) {
		t.Fatalf("a second bind: %v, want ErrNoConnection", err)
	}
	if _, _, err := tab.BindConnection(id2, t0.Add(ConnectionBindTimeout)); !errors.Is(err, ErrNoConnection) {
		t.Fatalf("a bind at the deadline: %v, want ErrNoConnection", err)
	}
	tab.Expire(t0.Add(ConnectionBindTimeout))
	if exp := got(t, ev.conn); exp != id2 {
		t.Fatalf("expired %d, want the unbound %d", exp, id2)
	}
	ev.none(t, "after the unbound one expired")
	if _, _, bound, ok := tab.Connection(id); !ok || !bound {
		t.Fatal("the bound connection was dropped")
	}
	tab.End(a, EndConnectionClosed)
	got(t, ev.ended)
	if _, _, _, ok := tab.Connection(id); ok {
		t.Fatal("the ended allocation's connection is still found")
	}
	b := insert(t, tab, "b", tuple(2), v4(2), time.Hour)
	id3, _ := tab.AddConnection(b, peerA, t0, 0)
	tab.DropConnection(id3)
	if _, _, _, ok := tab.Connection(id3); ok || len(tab.due) != 1 {
		t.Fatalf("a dropped connection is still found (%v) or scheduled (%d items)", ok, len(tab.due))
	}
}
