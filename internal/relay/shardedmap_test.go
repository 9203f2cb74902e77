package relay

import (
	"net/netip"
	"testing"
)

// A socket whose channel was rebound to another socket must not remove the
// new route when it closes late.
func TestShardedMapDeleteSparesANewOwner(t *testing.T) {
	var m shardedMap[upKey, upRoute]
	old, cur := &Conn{}, &Conn{}
	k := upKey{client: netip.MustParseAddrPort("192.0.2.1:5000"), number: 0x4001}
	m.set(k, upRoute{conn: cur})
	m.del(k, old)
	if r, ok := m.get(k); !ok || r.conn != cur {
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
	var m shardedMap[clientKey, *Conn]
	a, b := &Conn{}, &Conn{}
	client := netip.MustParseAddrPort("[2001:db8::1]:5000")
	m.set(clientKey{client: client, server: 1}, a)
	m.set(clientKey{client: client, server: 2}, b)
	if c, _ := m.get(clientKey{client: client, server: 1}); c != a {
		t.Fatal("server 1's entry was replaced")
	}
	if c, _ := m.get(clientKey{client: client, server: 2}); c != b {
		t.Fatal("server 2's entry is missing")
	}
	if _, ok := m.get(clientKey{client: client, server: 3}); ok {
		t.Fatal("found an entry never set")
	}
}

// BenchmarkClientLookup is the Send indication path's table lookup.
func BenchmarkClientLookup(b *testing.B) {
	var m shardedMap[clientKey, *Conn]
	k := clientKey{client: netip.MustParseAddrPort("192.0.2.1:5000"), server: 1}
	m.set(k, &Conn{})
	b.ReportAllocs()
	for b.Loop() {
		if c, _ := m.get(k); c == nil {
			b.Fatal("lost the entry")
		}
	}
}
