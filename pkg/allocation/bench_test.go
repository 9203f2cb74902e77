package allocation

import (
	"encoding/binary"
	"net/netip"
	"sync/atomic"
	"testing"
	"time"

	"github.com/turnd/turnd/internal/netaddr"
)

// BenchmarkAdmitInsertEnd is one allocation's life in the table, from
// admission to its end, with goroutines sharing the one lock (-cpu 1,2).
func BenchmarkAdmitInsertEnd(b *testing.B) {
	tab := New(Limits{Total: 1 << 30, PerUser: 1 << 30, PerIP: 1 << 30, PerPrefix: 1 << 30}, Hooks{})
	var next atomic.Uint32
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			n := next.Add(1)
			tp, relayed := numbered(n)
			k, err := tab.Admit("u", tp.Client.Addr(), UDP)
			if err != nil {
				b.Fatal(err)
			}
			a := &Allocation{Tuple: tp, User: "u"}
			if err := k.Insert(a, [2]netip.AddrPort{relayed}, 10*time.Minute, t0); err != nil {
				b.Fatal(err)
			}
			tab.End(a, EndReleased)
		}
	})
}

// numbered is the n-th distinct client 5-tuple and relayed address.
func numbered(n uint32) (netaddr.FiveTuple, netip.AddrPort) {
	var ip [4]byte
	binary.BigEndian.PutUint32(ip[:], 0x0a000000|n>>8)
	client := netip.AddrPortFrom(netip.AddrFrom4(ip), uint16(1024+n&0xff))
	binary.BigEndian.PutUint32(ip[:], 0xc6000000|n>>16)
	relayed := netip.AddrPortFrom(netip.AddrFrom4(ip), uint16(n))
	return netaddr.FiveTuple{Client: client, Server: server}, relayed
}

// busy is a table of n allocations, each with two permissions and a
// channel, as a hand-over would find it.
func busy(b *testing.B, n int) *Table {
	tab := New(Limits{}, Hooks{})
	for i := range n {
		tp, relayed := numbered(uint32(i + 1))
		k, err := tab.Admit("u", tp.Client.Addr(), UDP)
		if err != nil {
			b.Fatal(err)
		}
		a := &Allocation{Tuple: tp, User: "u", Username: "1767225600:u", Realm: "turnd.local"}
		if err := k.Insert(a, [2]netip.AddrPort{relayed}, 10*time.Minute, t0); err != nil {
			b.Fatal(err)
		}
		if err := tab.BindChannel(a, 0x4000, peerA, t0, 0, 0); err != nil {
			b.Fatal(err)
		}
		if err := tab.Permit(a, []netip.Addr{peerB.Addr()}, t0, 0); err != nil {
			b.Fatal(err)
		}
	}
	return tab
}

// BenchmarkSnapshot writes out 10 000 allocations as JSON: what a
// hand-over costs before the successor reads it.
func BenchmarkSnapshot(b *testing.B) {
	tab := busy(b, 10_000)
	b.ReportAllocs()
	var size int
	for b.Loop() {
		out, err := tab.Snapshot().Marshal()
		if err != nil {
			b.Fatal(err)
		}
		size = len(out)
	}
	b.ReportMetric(float64(size), "bytes/snapshot")
}

// BenchmarkRestore reads 10 000 allocations back into a table.
func BenchmarkRestore(b *testing.B) {
	out, err := busy(b, 10_000).Snapshot().Marshal()
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		s, err := ParseSnapshot(out)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := Restore(s, Limits{}, Hooks{}, clients); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSnapshotUnderLock is the part of Snapshot that holds the
// table's lock: how long every request waits during a hand-over.
func BenchmarkSnapshotUnderLock(b *testing.B) {
	tab := busy(b, 10_000)
	b.ReportAllocs()
	for b.Loop() {
		tab.snapshot(func(*Allocation) bool { return true })
	}
}
