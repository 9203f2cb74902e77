package allocation

import (
	"net"
	"testing"
	"time"
)

func TestExpiry(t *testing.T) {
	r := NewRegistry(Limits{})
	if e := r.Expiry(); !e.Oldest.IsZero() || !e.Next.IsZero() || !e.Last.IsZero() {
		t.Fatalf("empty registry: %+v, want zero times", e)
	}
	t0 := time.Unix(1_700_000_000, 0)
	server := &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 3478}
	a := &net.UDPAddr{IP: net.IPv4(127, 0, 0, 2), Port: 1000}
	b := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2), Port: 1000}
	r.Add(Info{Client: a, Server: server, Created: t0})
	r.Add(Info{Client: b, Server: server, Created: t0.Add(time.Minute)})
	if e := r.Expiry(); !e.Oldest.Equal(t0) || !e.Next.IsZero() {
		t.Errorf("before any grant: %+v, want oldest t0 and no expiry", e)
	}
	r.Extend(a, server, t0.Add(10*time.Minute))
	r.Extend(b, server, t0.Add(5*time.Minute))
	// A refresh moves an expiry later; the UDP and TCP client sharing an
	// address are two allocations.
	r.Extend(a, server, t0.Add(20*time.Minute))
	e := r.Expiry()
	if !e.Next.Equal(t0.Add(5*time.Minute)) || !e.Last.Equal(t0.Add(20*time.Minute)) {
		t.Errorf("expiry %+v, want next t0+5m, last t0+20m", e)
	}
	// Refresh 0 deletes first: a late grant for a gone 5-tuple is ignored.
	r.Remove(a, server)
	r.Extend(a, server, t0.Add(time.Hour))
	if e := r.Expiry(); !e.Last.Equal(t0.Add(5*time.Minute)) || r.Count() != 1 {
		t.Errorf("after removal: %+v (count %d), want last t0+5m", e, r.Count())
	}
}
