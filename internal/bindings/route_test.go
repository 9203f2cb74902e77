package bindings_test

import (
	"net/netip"
	"testing"

	"github.com/turnd/turnd/internal/bindings"
)

var (
	peer4  = netip.MustParseAddrPort("192.0.2.7:4000")
	mapped = netip.MustParseAddrPort("[::ffff:192.0.2.7]:4000")
	peer6  = netip.MustParseAddrPort("[2001:db8::7]:4000")
)

// TestRouteFindsEachForm: a peer seen mapped on a dual-stack socket is the
// peer the table stored unmapped.
func TestRouteFindsEachForm(t *testing.T) {
	var r bindings.Route
	if r.Permitted(peer4.Addr()) {
		t.Fatal("an empty route permits a peer")
	}
	if _, ok := r.Peer(0x4000); ok {
		t.Fatal("an empty route has a channel")
	}
	r.SetPermissions([]netip.Addr{peer4.Addr(), peer6.Addr()})
	r.SetChannels([]bindings.Channel{{Number: 0x4000, Peer: peer4}})
	for _, a := range []netip.AddrPort{peer4, mapped} {
		if !r.Permitted(a.Addr()) {
			t.Errorf("%v not permitted", a)
		}
		if n, ok := r.Number(a); !ok || n != 0x4000 {
			t.Errorf("Number(%v) = %#x, %v; want 0x4000", a, n, ok)
		}
	}
	if p, ok := r.Peer(0x4000); !ok || p != peer4 {
		t.Errorf("Peer(0x4000) = %v, %v", p, ok)
	}
	if _, ok := r.Number(peer6); ok {
		t.Error("a permitted peer without a channel has a number")
	}
	if _, ok := r.Peer(0x4001); ok {
		t.Error("an unbound number has a peer")
	}
}

// TestRouteSetsAreCopyOnWrite: a reader holding the old set keeps seeing
// it whole while the writer installs another.
func TestRouteSetsAreCopyOnWrite(t *testing.T) {
	var r bindings.Route
	r.SetChannels([]bindings.Channel{{Number: 0x4000, Peer: peer4}})
	old := r.Channels()
	r.SetChannels([]bindings.Channel{{Number: 0x4001, Peer: peer6}})
	if len(old) != 1 || old[0].Number != 0x4000 {
		t.Fatalf("the old set changed under its reader: %v", old)
	}
	if _, ok := r.Peer(0x4000); ok {
		t.Fatal("a replaced channel still routes")
	}
}

// TestRouteReadsDoNotAllocate: the fast path's three reads cost no heap
// allocation.
func TestRouteReadsDoNotAllocate(t *testing.T) {
	var r bindings.Route
	r.SetPermissions([]netip.Addr{peer6.Addr(), peer4.Addr()})
	r.SetChannels([]bindings.Channel{{Number: 0x4001, Peer: peer6}, {Number: 0x4000, Peer: peer4}})
	allocs := testing.AllocsPerRun(1000, func() {
		if !r.Permitted(mapped.Addr()) {
			t.Fatal("not permitted")
		}
		if _, ok := r.Peer(0x4000); !ok {
			t.Fatal("no peer")
		}
		if _, ok := r.Number(mapped); !ok {
			t.Fatal("no number")
		}
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per read", allocs)
	}
}

// TestMirrorSeesEachChannelSet: the mirror runs after every SetChannels,
// seeing the new set, and not once cleared.
func TestMirrorSeesEachChannelSet(t *testing.T) {
	var r bindings.Route
	var seen [][]bindings.Channel
	r.SetMirror(func() { seen = append(seen, r.Channels()) })
	peer := netip.MustParseAddrPort("192.0.2.1:5000")
	r.SetChannels([]bindings.Channel{{Number: 0x4000, Peer: peer}})
	r.SetChannels(nil)
	r.SetMirror(nil)
	r.SetChannels([]bindings.Channel{{Number: 0x4001, Peer: peer}})
	if len(seen) != 2 || len(seen[0]) != 1 || seen[0][0].Number != 0x4000 || len(seen[1]) != 0 {
		t.Fatalf("mirror saw %v; want [[0x4000] []]", seen)
	}
}
