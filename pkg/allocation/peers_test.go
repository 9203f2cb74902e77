package allocation

import (
	"errors"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/turnd/turnd/internal/bindings"
)

var (
	peerA  = netip.MustParseAddrPort("203.0.113.5:4000")
	peerB  = netip.MustParseAddrPort("203.0.113.6:4000")
	peer6  = netip.MustParseAddrPort("[2001:db8:9::5]:4000")
	mapped = netip.MustParseAddrPort("[::ffff:203.0.113.7]:4000")
)

// TestRefreshPerFamily: RFC 8656 §8.2 — a Refresh with
// REQUESTED-ADDRESS-FAMILY refreshes or deletes that family alone, one
// without it both; a family not allocated is 443; the allocation ends
// with its last family.
func TestRefreshPerFamily(t *testing.T) {
	ev, hooks := newEvents()
	tab := New(Limits{}, hooks)
	a := insert(t, tab, "a", tuple(1), dual(1), 10*time.Minute)
	if got, err := tab.Refresh(a, bindings.V6, time.Hour, t0); err != nil || got != time.Hour {
		t.Fatalf("refresh V6: %v, %v", got, err)
	}
	if a.Expires(bindings.V4) != t0.Add(10*time.Minute) || a.Expires(bindings.V6) != t0.Add(time.Hour) {
		t.Fatalf("deadlines V4 %v, V6 %v", a.Expires(bindings.V4).Sub(t0), a.Expires(bindings.V6).Sub(t0))
	}
	if _, err := tab.Refresh(a, 0, 20*time.Minute, t0); err != nil {
		t.Fatal(err)
	}
	if a.Expires(bindings.V4) != t0.Add(20*time.Minute) || a.Expires(bindings.V6) != t0.Add(20*time.Minute) {
		t.Fatal("a Refresh without a family did not set both")
	}
	if err := tab.Permit(a, []netip.Addr{peerA.Addr(), peer6.Addr()}, t0, 0); err != nil {
		t.Fatal(err)
	}
	// Deleting IPv4 takes its peers' permissions with it.
	if _, err := tab.Refresh(a, bindings.V4, 0, t0); err != nil {
		t.Fatal(err)
	}
	if f := <-ev.family; f != bindings.V4 {
		t.Fatalf("FamilyEnded %v, want V4", f)
	}
	ev.none(t, "after deleting V4")
	if a.Families() != bindings.V6 || a.Route.Permitted(peerA.Addr()) || !a.Route.Permitted(peer6.Addr()) {
		t.Fatalf("after deleting V4: families %v, v4 peer %v, v6 peer %v",
			a.Families(), a.Route.Permitted(peerA.Addr()), a.Route.Permitted(peer6.Addr()))
	}
	if _, err := tab.Refresh(a, bindings.V4, time.Minute, t0); !errors.Is(err, ErrFamilyMismatch) {
		t.Fatalf("refresh of a deleted family: %v, want ErrFamilyMismatch", err)
	}
	if _, err := tab.Refresh(a, bindings.V6, 0, t0); err != nil {
		t.Fatal(err)
	}
	if why := <-ev.ended; why != EndReleased {
		t.Fatalf("ended %v, want released", why)
	}
	if _, err := tab.Refresh(a, 0, time.Minute, t0); !errors.Is(err, ErrGone) {
		t.Fatalf("refresh of an ended allocation: %v, want ErrGone", err)
	}

	// Refresh 0 without a family deletes a dual allocation at once.
	b := insert(t, tab, "b", tuple(2), dual(2), 10*time.Minute)
	if _, err := tab.Refresh(b, 0, 0, t0); err != nil {
		t.Fatal(err)
	}
	if why := <-ev.ended; why != EndReleased {
		t.Fatalf("ended %v, want released", why)
	}
	ev.none(t, "after deleting both")
	// A Refresh may shorten a lifetime: the earlier deadline is kept exactly.
	c := insert(t, tab, "c", tuple(3), v4(3), time.Hour)
	if _, err := tab.Refresh(c, 0, time.Minute, t0); err != nil {
		t.Fatal(err)
	}
	if next := tab.Expire(t0); !next.Equal(t0.Add(time.Minute)) {
		t.Fatalf("next deadline %v after a shortening refresh, want 1m", next.Sub(t0))
	}
}

// TestPermitAllOrNone: RFC 8656 §10.2 — the permissions of a request are
// installed all together, or none when one peer is of a family not
// allocated or the cap would be passed; the route gets a fresh set.
func TestPermitAllOrNone(t *testing.T) {
	tab := New(Limits{}, Hooks{})
	a := insert(t, tab, "a", tuple(1), v4(1), 10*time.Minute)
	if err := tab.Permit(a, []netip.Addr{peerA.Addr(), peer6.Addr()}, t0, 0); !errors.Is(err, ErrFamilyMismatch) {
		t.Fatalf("an IPv6 peer on an IPv4 allocation: %v, want ErrFamilyMismatch", err)
	}
	if a.Route.Permitted(peerA.Addr()) {
		t.Fatal("a refused request installed a permission")
	}
	if err := tab.Permit(a, []netip.Addr{peerA.Addr(), mapped.Addr(), peerA.Addr()}, t0, 2); err != nil {
		t.Fatalf("two peers (one mapped, one twice) under a cap of 2: %v", err)
	}
	before := a.Route.Permissions()
	if err := tab.Permit(a, []netip.Addr{peerA.Addr(), peerB.Addr()}, t0, 2); !errors.Is(err, ErrPermissionQuota) {
		t.Fatalf("a third peer past the cap: %v, want ErrPermissionQuota", err)
	}
	if a.Route.Permitted(peerB.Addr()) {
		t.Fatal("the refused request installed its new peer")
	}
	if err := tab.Permit(a, []netip.Addr{peerA.Addr()}, t0.Add(time.Minute), 2); err != nil {
		t.Fatalf("refreshing at the cap: %v", err)
	}
	if exp, _ := a.Permission(peerA.Addr()); !exp.Equal(t0.Add(time.Minute + PermissionLifetime)) {
		t.Fatalf("refreshed permission expires %v", exp.Sub(t0))
	}
	if !a.Route.Permitted(netip.MustParseAddr("203.0.113.7")) || len(before) != 2 {
		t.Fatalf("a mapped peer is not permitted unmapped, or a published set changed: %v", before)
	}
	if u := a.Usage(); u.Permissions != 2 {
		t.Fatalf("%d permissions counted, want 2 (refreshes not counted)", u.Permissions)
	}
}

// TestChannelConflicts: RFC 8656 §12.2 — a number bound to another peer,
// or a peer bound to another number, is refused (400), also while the old
// binding cools down after its expiry; the same pair refreshes; a
// ChannelBind installs its peer's permission; the caps hold.
func TestChannelConflicts(t *testing.T) {
	tab := New(Limits{}, Hooks{})
	a := insert(t, tab, "a", tuple(1), v4(1), time.Hour)
	if err := tab.BindChannel(a, 0x4000, peerA, t0, 2, 0); err != nil {
		t.Fatal(err)
	}
	if !a.Route.Permitted(peerA.Addr()) {
		t.Fatal("ChannelBind did not install its peer's permission")
	}
	for _, c := range []struct {
		n    uint16
		peer netip.AddrPort
		want error
	}{
		{0x4000, peerB, ErrChannelNumberTaken},
		{0x4001, peerA, ErrChannelPeerTaken},
		{0x4001, netip.AddrPortFrom(netip.MustParseAddr("::ffff:203.0.113.5"), 4000), ErrChannelPeerTaken},
		{0x4001, peer6, ErrFamilyMismatch},
	} {
		if err := tab.BindChannel(a, c.n, c.peer, t0, 2, 0); !errors.Is(err, c.want) {
			t.Errorf("bind %#x to %v: %v, want %v", c.n, c.peer, err, c.want)
		}
	}
	if err := tab.BindChannel(a, 0x4000, peerA, t0.Add(time.Minute), 2, 0); err != nil {
		t.Fatalf("refreshing the same pair: %v", err)
	}
	if _, exp, _ := a.Channel(0x4000); !exp.Equal(t0.Add(time.Minute + ChannelLifetime)) {
		t.Fatalf("refreshed channel expires %v", exp.Sub(t0))
	}
	if err := tab.BindChannel(a, 0x4001, peerB, t0, 2, 1); !errors.Is(err, ErrPermissionQuota) {
		t.Fatalf("a channel whose permission passes the permission cap: %v, want ErrPermissionQuota", err)
	}
	if err := tab.BindChannel(a, 0x4001, peerB, t0, 2, 0); err != nil {
		t.Fatal(err)
	}
	if err := tab.BindChannel(a, 0x4002, netip.MustParseAddrPort("203.0.113.8:1"), t0, 2, 0); !errors.Is(err, ErrChannelQuota) {
		t.Fatalf("a third channel past a cap of 2: %v, want ErrChannelQuota", err)
	}
	got := a.Route.Channels()
	slices.SortFunc(got, func(x, y bindings.Channel) int { return int(x.Number) - int(y.Number) })
	if want := []bindings.Channel{{Number: 0x4000, Peer: peerA}, {Number: 0x4001, Peer: peerB}}; !slices.Equal(got, want) {
		t.Fatalf("route channels %v, want %v", got, want)
	}

	// Expired, the binding cools down: not routed, but its number and
	// peer stay each other's; the same pair may be bound again at once.
	exp := t0.Add(time.Minute + ChannelLifetime)
	tab.Expire(exp)
	if _, ok := a.Route.Peer(0x4000); ok {
		t.Fatal("an expired channel is routed")
	}
	if err := tab.BindChannel(a, 0x4000, netip.MustParseAddrPort("203.0.113.9:1"), exp, 3, 0); !errors.Is(err, ErrChannelNumberTaken) {
		t.Fatalf("a cooling number to another peer: %v, want ErrChannelNumberTaken", err)
	}
	if err := tab.BindChannel(a, 0x4003, peerA, exp, 3, 0); !errors.Is(err, ErrChannelPeerTaken) {
		t.Fatalf("a cooling peer to another number: %v, want ErrChannelPeerTaken", err)
	}
	if err := tab.BindChannel(a, 0x4000, peerA, exp, 3, 0); err != nil {
		t.Fatalf("the cooling pair bound again: %v", err)
	}
	if p, ok := a.Route.Peer(0x4000); !ok || p != peerA {
		t.Fatal("the pair bound again is not routed")
	}
	if u := a.Usage(); u.Channels != 3 {
		t.Fatalf("%d channels counted, want 3 (two, and one bound again after expiry)", u.Channels)
	}
}

// TestRevoke: a reload's narrower peer filter removes the permissions and
// channels of the peers it now denies, in every allocation, and counts
// them.
func TestRevoke(t *testing.T) {
	tab := New(Limits{}, Hooks{})
	a := insert(t, tab, "a", tuple(1), v4(1), time.Hour)
	b := insert(t, tab, "b", tuple(2), v4(2), time.Hour)
	for _, x := range []*Allocation{a, b} {
		if err := tab.BindChannel(x, 0x4000, peerA, t0, 0, 0); err != nil {
			t.Fatal(err)
		}
		if err := tab.Permit(x, []netip.Addr{peerB.Addr()}, t0, 0); err != nil {
			t.Fatal(err)
		}
	}
	perms, chans := tab.Revoke(func(p netip.Addr) bool { return p == peerA.Addr() })
	if perms != 2 || chans != 2 {
		t.Fatalf("revoked %d permissions and %d channels, want 2 and 2", perms, chans)
	}
	for _, x := range []*Allocation{a, b} {
		if x.Route.Permitted(peerA.Addr()) || !x.Route.Permitted(peerB.Addr()) {
			t.Fatal("revoke removed the wrong permissions")
		}
		if _, ok := x.Route.Peer(0x4000); ok {
			t.Fatal("a revoked channel is routed")
		}
	}
	if err := tab.BindChannel(a, 0x4000, peerB, t0, 0, 0); err != nil {
		t.Fatalf("a revoked channel's number is still held: %v", err)
	}
}
