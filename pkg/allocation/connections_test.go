package allocation

import (
	"net/netip"
	"testing"
	"time"
)

// TestBoundConnectionsAreNotPending: the Connect cap counts connections
// waiting for their ConnectionBind (relay.MaxPendingConnects' meaning);
// a bound one is a data connection and frees its place, so an RFC 6062
// allocation may hold more live peers than the cap.
func TestBoundConnectionsAreNotPending(t *testing.T) {
	_, hooks := newEvents()
	tab := New(Limits{}, hooks)
	a := insert(t, tab, "a", tuple(1), v4(1), time.Hour)
	id, err := tab.AddConnection(a, peerA, t0, 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := tab.BindConnection(id, t0); err != nil {
		t.Fatal(err)
	}
	if _, err := tab.AddConnection(a, peerB, t0, 1); err != nil {
		t.Fatalf("a second peer with the first bound, cap 1: %v", err)
	}
	if _, err := tab.AddConnection(a, netip.MustParseAddrPort("203.0.113.9:1"), t0, 1); err == nil {
		t.Fatal("a second pending connection past a cap of 1 was accepted")
	}
}
