package gate

import (
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/pion/stun/v4"

	"github.com/turnd/turnd/internal/netaddr"
)

// TestReservationTableFullEvictsOldestOnly: a burst that fills the table
// pushes out the oldest tokens one by one; everyone else's stay usable.
func TestReservationTableFullEvictsOldestOnly(t *testing.T) {
	var tab reservationTable
	now := time.Unix(1000, 0)
	exp := now.Add(reservationLifetime)
	tab.put("victim", reservation{port: 50001, expires: exp, user: "alice"}, now)
	for i := range maxReservations - 1 {
		tab.put(fmt.Sprintf("early-%d", i), reservation{port: 50003, expires: exp, user: "bob"}, now)
	}
	later := now.Add(time.Second)
	tab.put("burst-0", reservation{port: 50005, expires: later.Add(reservationLifetime), user: "mallory"}, later)
	if n := tab.size(); n != maxReservations {
		t.Fatalf("table holds %d tokens, want %d", n, maxReservations)
	}
	if _, ok := tab.take("victim", later); ok {
		t.Fatal("the oldest token survived a full table")
	}
	if r, ok := tab.take("early-0", later); !ok || r.port != 50003 {
		t.Fatalf("the second-oldest token was lost too (%v, %v): the table was wiped", r, ok)
	}
	if _, ok := tab.take(fmt.Sprintf("early-%d", maxReservations-2), later); !ok {
		t.Fatal("a recent token was lost")
	}
}

// TestReservationTableSweepsExpired: expired tokens leave before any live
// one is evicted, stop counting against their user, and cannot be used.
func TestReservationTableSweepsExpired(t *testing.T) {
	var tab reservationTable
	now := time.Unix(1000, 0)
	for i := range maxReservations / 2 {
		tab.put(fmt.Sprintf("old-%d", i), reservation{port: 50001, expires: now.Add(reservationLifetime), user: "alice"}, now)
	}
	if got := tab.count("alice", now); got != maxReservations/2 {
		t.Fatalf("alice holds %d, want %d", got, maxReservations/2)
	}
	later := now.Add(reservationLifetime + time.Second)
	if _, ok := tab.take("old-0", later); ok {
		t.Fatal("an expired token resolved")
	}
	tab.put("fresh", reservation{port: 50003, expires: later.Add(reservationLifetime), user: "bob"}, later)
	if n := tab.size(); n != 1 {
		t.Fatalf("table holds %d tokens after the sweep, want 1", n)
	}
	if got := tab.count("alice", later); got != 0 {
		t.Fatalf("alice's expired tokens still count: %d", got)
	}
}

// TestReservationTableCountsPerUser: a token counts against its user until
// it is used; a token put again replaces itself.
func TestReservationTableCountsPerUser(t *testing.T) {
	var tab reservationTable
	now := time.Unix(1000, 0)
	exp := now.Add(reservationLifetime)
	tab.put("a1", reservation{port: 1, expires: exp, user: "alice"}, now)
	tab.put("a2", reservation{port: 3, expires: exp, user: "alice"}, now)
	tab.put("b1", reservation{port: 5, expires: exp, user: "bob"}, now)
	tab.put("a2", reservation{port: 7, expires: exp, user: "alice"}, now)
	if a, b := tab.count("alice", now), tab.count("bob", now); a != 2 || b != 1 {
		t.Fatalf("alice %d, bob %d: want 2 and 1", a, b)
	}
	if r, ok := tab.take("a2", now); !ok || r.port != 7 {
		t.Fatalf("take a2 = %v, %v", r, ok)
	}
	if _, ok := tab.take("a2", now); ok {
		t.Fatal("a token resolved twice")
	}
	if a := tab.count("alice", now); a != 1 {
		t.Fatalf("alice %d after using a token, want 1", a)
	}
}

// TestReservationTableOrderStaysBounded: tokens used at once do not pile up
// in the eviction order.
func TestReservationTableOrderStaysBounded(t *testing.T) {
	var tab reservationTable
	now := time.Unix(1000, 0)
	for i := range 10 * maxReservations {
		tok := fmt.Sprintf("t-%d", i)
		tab.put(tok, reservation{port: 1, expires: now.Add(reservationLifetime), user: "u"}, now)
		tab.take(tok, now)
	}
	if n := len(tab.order); n > 2*maxReservations+1 {
		t.Fatalf("order lists %d tokens, want at most %d", n, 2*maxReservations+1)
	}
}

// TestAnsweredAllocateForgetsItsReservationRequest: an Allocate that asked
// for a reservation and was refused (a quota, say) leaves nothing behind in
// the hand-over table that names the token's owner.
func TestAnsweredAllocateForgetsItsReservationRequest(t *testing.T) {
	g := New(&Policy{}, Hooks{})
	client := &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 50000}
	server := &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 3478}
	g.reserving.put(netaddr.Of(client, server), "alice")
	refused, err := stun.Build(stun.TransactionID, stun.NewType(stun.MethodAllocate, stun.ClassErrorResponse),
		stun.CodeAllocQuotaReached, stun.Fingerprint)
	if err != nil {
		t.Fatal(err)
	}
	g.noteResponse(refused.Raw, client, server)
	if n := g.reserving.size(); n != 0 {
		t.Fatalf("%d reservation requests left after the Allocate was answered", n)
	}
}
