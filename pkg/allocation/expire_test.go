package allocation

import (
	"context"
	"net/netip"
	"testing"
	"time"

	"github.com/turnd/turnd/internal/bindings"
)

// events records the table's hook calls.
type events struct {
	ended      chan EndReason
	family     chan bindings.Families
	unreserved chan Reservation
	conn       chan uint32
}

func newEvents() (*events, Hooks) {
	e := &events{make(chan EndReason, 16), make(chan bindings.Families, 16), make(chan Reservation, 16), make(chan uint32, 16)}
	return e, Hooks{
		Ended:       func(_ *Allocation, why EndReason) { e.ended <- why },
		FamilyEnded: func(_ *Allocation, f bindings.Families, _ netip.AddrPort) { e.family <- f },
		Unreserved:  func(r Reservation) { e.unreserved <- r },
		ConnExpired: func(_ *Allocation, id uint32) { e.conn <- id },
	}
}

// none fails if any hook was called.
func (e *events) none(t *testing.T, when string) {
	t.Helper()
	select {
	case why := <-e.ended:
		t.Fatalf("%s: an allocation ended (%v)", when, why)
	case f := <-e.family:
		t.Fatalf("%s: family %v ended", when, f)
	case r := <-e.unreserved:
		t.Fatalf("%s: reservation %x dropped", when, r.Token)
	case id := <-e.conn:
		t.Fatalf("%s: connection %d expired", when, id)
	default:
	}
}

// TestExpireOnAFakeClock: each kind of deadline passes at its exact time
// and not a nanosecond before; a refresh moves a deadline without a heap
// operation, and the stale item is pushed back when it surfaces.
func TestExpireOnAFakeClock(t *testing.T) {
	ev, hooks := newEvents()
	tab := New(Limits{}, hooks)
	a := insert(t, tab, "a", tuple(1), dual(1), 10*time.Minute)
	peer4 := netip.MustParseAddrPort("203.0.113.5:4000")
	if err := tab.Permit(a, []netip.Addr{netip.MustParseAddr("203.0.113.6")}, t0, 0); err != nil {
		t.Fatal(err)
	}
	if err := tab.BindChannel(a, 0x4000, peer4, t0, 0, 0); err != nil {
		t.Fatal(err)
	}
	tok, err := tab.Reserve(Reservation{Port: 50003, User: "a", Expires: t0.Add(ReservationLifetime), Holder: a.Tuple})
	if err != nil {
		t.Fatal(err)
	}
	b := insert(t, tab, "b", tuple(2), v4(2), 10*time.Minute)
	b.PeerTCP = true
	id, err := tab.AddConnection(b, peer4, t0, 0)
	if err != nil {
		t.Fatal(err)
	}
	items := len(tab.due)

	// The reservation and the connection: 30 s.
	if next := tab.Expire(t0.Add(ReservationLifetime - 1)); !next.Equal(t0.Add(ReservationLifetime)) {
		t.Fatalf("next deadline %v, want t0+30s", next.Sub(t0))
	}
	ev.none(t, "a nanosecond before 30 s")
	tab.Expire(t0.Add(ReservationLifetime))
	if r := <-ev.unreserved; r.Token != tok || r.Port != 50003 {
		t.Fatalf("unreserved %+v", r)
	}
	if got := <-ev.conn; got != id {
		t.Fatalf("connection %d expired, want %d", got, id)
	}
	if _, ok := tab.TakeReservation(tok[:], t0); ok {
		t.Fatal("an expired reservation was taken")
	}

	// Refresh the allocations and the permission before they are due: no
	// heap item is added, and none of them ends at its first deadline.
	for i := range 100 {
		now := t0.Add(time.Minute + time.Duration(i)*time.Millisecond)
		if _, err := tab.Refresh(a, 0, 20*time.Minute, now); err != nil {
			t.Fatal(err)
		}
		if err := tab.Permit(a, []netip.Addr{netip.MustParseAddr("203.0.113.6")}, now, 0); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(tab.due); n != items-2 {
		t.Fatalf("%d heap items after 100 refreshes, want %d (one per deadline)", n, items-2)
	}
	last := t0.Add(time.Minute + 99*time.Millisecond)

	// The channel's permission (refreshed by its ChannelBind only) goes at
	// 300 s; the refreshed one lives on.
	tab.Expire(t0.Add(PermissionLifetime))
	if a.Route.Permitted(peer4.Addr()) || !a.Route.Permitted(netip.MustParseAddr("203.0.113.6")) {
		t.Fatal("at 300 s: the unrefreshed permission lives or the refreshed one went")
	}
	ev.none(t, "at 300 s")

	// The channel at 600 s; b's lifetime too, a's was refreshed.
	tab.Expire(t0.Add(ChannelLifetime - 1))
	if _, ok := a.Route.Peer(0x4000); !ok {
		t.Fatal("the channel went before 600 s")
	}
	tab.Expire(t0.Add(ChannelLifetime))
	if _, ok := a.Route.Peer(0x4000); ok {
		t.Fatal("the channel is still routed at 600 s")
	}
	if why := <-ev.ended; why != EndExpired {
		t.Fatalf("b ended %v, want expired", why)
	}
	ev.none(t, "at 600 s")
	if a.Expires(bindings.V4) != last.Add(20*time.Minute) {
		t.Fatalf("a's deadline %v, want its last refresh + 20m", a.Expires(bindings.V4).Sub(t0))
	}

	// The cool-down ends 5 minutes after the channel's expiry: then its
	// number may go to another peer.
	other := netip.MustParseAddrPort("203.0.113.6:4000")
	if err := tab.BindChannel(a, 0x4000, other, t0.Add(ChannelLifetime+ChannelCooldown-1), 0, 0); err == nil {
		t.Fatal("a cooling channel number was bound to another peer")
	}
	tab.Expire(t0.Add(ChannelLifetime + ChannelCooldown))
	if err := tab.BindChannel(a, 0x4000, other, t0.Add(ChannelLifetime+ChannelCooldown), 0, 0); err != nil {
		t.Fatalf("after its cool-down the number is still taken: %v", err)
	}

	// One family of a, refreshed alone, outlives the other; the allocation
	// ends with its last.
	if _, err := tab.Refresh(a, bindings.V6, 30*time.Minute, last); err != nil {
		t.Fatal(err)
	}
	tab.Expire(last.Add(20 * time.Minute))
	if f := <-ev.family; f != bindings.V4 {
		t.Fatalf("family %v ended, want V4", f)
	}
	if _, ok := a.Relayed(bindings.V4); ok {
		t.Fatal("the expired family still has its address")
	}
	if _, ok := tab.ByRelayed(relay4(1)); ok {
		t.Fatal("the expired family's address still finds the allocation")
	}
	ev.none(t, "when V4 ended")
	next := tab.Expire(last.Add(30*time.Minute - 1))
	if !next.Equal(last.Add(30 * time.Minute)) {
		t.Fatalf("next %v, want V6's deadline", next.Sub(t0))
	}
	tab.Expire(next)
	if why := <-ev.ended; why != EndExpired {
		t.Fatalf("a ended %v, want expired", why)
	}
	if len(tab.due) != 0 || tab.Count() != 0 {
		t.Fatalf("%d heap items and %d allocations left", len(tab.due), tab.Count())
	}
}

// TestRunOnAFakeClock: Run sleeps until the earliest deadline, does not
// wake for a refresh that moved it later (the stale item is pushed back
// when it surfaces), and wakes early for an earlier one.
func TestRunOnAFakeClock(t *testing.T) {
	// A guard, not a synchronisation: a Run that misses a wake-up fails
	// here instead of hanging the suite.
	guard := time.AfterFunc(10*time.Second, func() { panic("TestRunOnAFakeClock: Run missed a wake-up") })
	defer guard.Stop()
	ev, hooks := newEvents()
	tab := New(Limits{}, hooks)
	clk := newFakeClock(t0)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { tab.Run(ctx, clk); close(done) }()
	defer func() { cancel(); <-done }()

	a := insert(t, tab, "a", tuple(1), v4(1), 10*time.Minute)
	if d := <-clk.asked; d != 10*time.Minute {
		t.Fatalf("Run sleeps %v, want 10m", d)
	}
	clk.Advance(5 * time.Minute)
	if _, err := tab.Refresh(a, 0, 20*time.Minute, clk.Now()); err != nil {
		t.Fatal(err)
	}
	select {
	case d := <-clk.asked:
		t.Fatalf("a later deadline woke Run (sleep %v)", d)
	default:
	}
	clk.Advance(5 * time.Minute)
	if d := <-clk.asked; d != 15*time.Minute {
		t.Fatalf("after the stale deadline Run sleeps %v, want 15m", d)
	}
	ev.none(t, "at the stale deadline")

	insert(t, tab, "b", tuple(2), v4(2), time.Minute) // inserted at t0, so due at t0+1m: now
	// Due already: Run wakes, ends b, and sleeps until a's deadline.
	if why := <-ev.ended; why != EndExpired {
		t.Fatalf("b ended %v", why)
	}
	if d := <-clk.asked; d != 15*time.Minute {
		t.Fatalf("Run sleeps %v after b, want 15m", d)
	}
	clk.Advance(15 * time.Minute)
	if why := <-ev.ended; why != EndExpired {
		t.Fatalf("a ended %v", why)
	}
}
