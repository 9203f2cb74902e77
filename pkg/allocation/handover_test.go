package allocation

import (
	"errors"
	"testing"
	"time"

	"github.com/turnd/turnd/internal/bindings"
	"github.com/turnd/turnd/internal/netaddr"
)

// TestSnapshotOfMovable: a hand-over writes out what a successor can
// serve — the RFC 6062 allocation with its connections, not the TLS
// client's — and the reservation only its holder's.
func TestSnapshotOfMovable(t *testing.T) {
	tab, a, b := fixture(t)
	s := tab.SnapshotOf(Movable)
	if len(s.Allocations) != 2 || s.Allocations[0].Client != a.Tuple.Client && s.Allocations[1].Client != a.Tuple.Client {
		t.Fatalf("movable snapshot holds %d allocations, want %v's and the RFC 6062 one", len(s.Allocations), a.Tuple.Client)
	}
	if len(s.Reservations) != 1 {
		t.Fatalf("movable snapshot holds %d reservations, want a's", len(s.Reservations))
	}
	if !Movable(b) {
		t.Fatal("an RFC 6062 allocation is not movable")
	}
	if got := len(tab.Snapshot().Allocations); got != 2 {
		t.Fatalf("Snapshot holds %d allocations, want all but the TLS one", got)
	}
}

// TestRestoreIntoTheServersTable: the table the drain and the metrics
// already hold is the one restored into; a table in use is refused, and a
// failed restore leaves the table empty and serving as new.
func TestRestoreIntoTheServersTable(t *testing.T) {
	src, _, _ := fixture(t)
	s := src.SnapshotOf(Movable)

	ended := make(chan EndReason, 1)
	dst := New(Limits{PerUser: 1}, Hooks{Ended: func(_ *Allocation, why EndReason) { ended <- why }})
	broken := s
	broken.Reservations = append(broken.Reservations, SnapshotReservation{Token: "0909090909090909", Port: 1})
	if err := dst.Restore(broken, clients); !errors.Is(err, ErrSnapshotInvalid) {
		t.Fatalf("restore of a broken snapshot: %v", err)
	}
	if n := dst.Count(); n != 0 || len(dst.Snapshot().Allocations) != 0 || len(dst.byRelay) != 0 || len(dst.due) != 0 {
		t.Fatalf("a failed restore left %d allocations, %d relayed, %d deadlines", n, len(dst.byRelay), len(dst.due))
	}
	must(t, dst.Restore(s, clients))
	if dst.Count() != 2 || dst.UserCount("alice") != 1 {
		t.Fatalf("restored count %d, alice %d; want 2 (alice's, bob's RFC 6062 one), 1", dst.Count(), dst.UserCount("alice"))
	}
	// The quotas count the restored allocation: alice has her one.
	if _, err := dst.Admit("alice", s.Allocations[0].Client.Addr(), UDP); !errors.Is(err, ErrUserQuota) {
		t.Fatalf("admit past alice's quota after a restore: %v", err)
	}
	if err := dst.Restore(s, clients); !errors.Is(err, ErrTableInUse) {
		t.Fatalf("restore into a table in use: %v", err)
	}
	// The restored deadlines drive the table's own clock and hooks.
	dst.Expire(s.Allocations[0].Relayed[0].Expires.Add(time.Second))
	if why := got(t, ended); why != EndExpired {
		t.Fatalf("restored allocation ended %v, want expired", why)
	}
}

// TestEndMoved: a moved allocation leaves through the same hook, with its
// own reason, so that its usage record is the successor's to write.
func TestEndMoved(t *testing.T) {
	if EndMoved.String() != "moved" {
		t.Fatalf("EndMoved is %q", EndMoved)
	}
	var why []EndReason
	tab := New(Limits{}, Hooks{Ended: func(_ *Allocation, r EndReason) { why = append(why, r) }})
	insert(t, tab, "alice", tuple(5000), v4(50002), time.Minute)
	tls := netaddr.FiveTuple{Client: tuple(5001).Client, Server: server, TCP: true}
	k, _ := tab.Admit("carol", tls.Client.Addr(), TLS)
	must(t, k.Insert(&Allocation{Tuple: tls, Transport: TLS, User: "carol", Route: &bindings.Route{}}, v4(50020), time.Hour, t0))
	if n := tab.EndWhere(Movable, EndMoved); n != 1 || len(why) != 1 || why[0] != EndMoved {
		t.Fatalf("EndWhere(Movable) ended %d (%v), want alice's as moved", n, why)
	}
	if tab.Count() != 1 {
		t.Fatalf("count %d after the move, want the TLS one", tab.Count())
	}
}
