package relay

import (
	"net/netip"
	"testing"

	"github.com/turnd/turnd/internal/bindings"
)

// An allocation whose client allocated again must not remove the new
// route when it closes late.
func TestShardedMapDeleteSparesANewOwner(t *testing.T) {
	var m shardedMap[clientKey, binding]
	old, cur := &bindings.Route{}, &bindings.Route{}
	k := clientKey{client: netip.MustParseAddrPort("192.0.2.1:5000"), server: 1}
	m.set(k, binding{route: cur})
	m.del(k, old)
	if r, ok := m.get(k); !ok || r.route != cur {
		t.Fatalf("after a stale delete: route %v, %v; want the new owner's", r, ok)
	}
	m.del(k, cur)
	if _, ok := m.get(k); ok {
		t.Fatal("the owner's delete left the route")
	}
}

// Keys that differ only where the hash does not look (the server side) are
// still separate entries.
func TestShardedMapKeepsKeysApart(t *testing.T) {
	var m shardedMap[clientKey, binding]
	a, b := &bindings.Route{}, &bindings.Route{}
	client := netip.MustParseAddrPort("[2001:db8::1]:5000")
	m.set(clientKey{client: client, server: 1}, binding{route: a})
	m.set(clientKey{client: client, server: 2}, binding{route: b})
	if c, _ := m.get(clientKey{client: client, server: 1}); c.route != a {
		t.Fatal("server 1's entry was replaced")
	}
	if c, _ := m.get(clientKey{client: client, server: 2}); c.route != b {
		t.Fatal("server 2's entry is missing")
	}
	if _, ok := m.get(clientKey{client: client, server: 3}); ok {
		t.Fatal("found an entry never set")
	}
}

// BenchmarkClientLookup is the Send indication path's table lookup.
func BenchmarkClientLookup(b *testing.B) {
	var m shardedMap[clientKey, binding]
	k := clientKey{client: netip.MustParseAddrPort("192.0.2.1:5000"), server: 1}
	m.set(k, binding{route: &bindings.Route{}})
	b.ReportAllocs()
	for b.Loop() {
		if c, _ := m.get(k); c.route == nil {
			b.Fatal("lost the entry")
		}
	}
}
