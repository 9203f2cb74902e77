package allocation

import (
	"errors"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/turnd/turnd/internal/bindings"
	"github.com/turnd/turnd/internal/netaddr"
)

func TestTableCountsAndQuotas(t *testing.T) {
	tab := New(Limits{Total: 3, PerUser: 2}, Hooks{})
	a1 := insert(t, tab, "alice", tuple(1), v4(50001), time.Minute)
	tcp := tuple(2)
	tcp.TCP = true
	insert(t, tab, "alice", tcp, v4(50002), time.Minute)
	if _, err := tab.Admit("alice", lo, UDP); !errors.Is(err, ErrUserQuota) {
		t.Fatalf("third allocation of alice: got %v, want ErrUserQuota", err)
	}
	insert(t, tab, "bob", tuple(3), v4(50003), time.Minute)
	if _, err := tab.Admit("carol", lo, UDP); !errors.Is(err, ErrTotalQuota) {
		t.Fatalf("fourth allocation: got %v, want ErrTotalQuota", err)
	}
	if got := tab.ByTransport(); got[UDP] != 2 || got[TCP] != 1 || got[TLS] != 0 {
		t.Fatalf("by transport = %v", got)
	}
	if !tab.End(a1, EndReleased) {
		t.Fatal("ending a live allocation reported it gone")
	}
	if tab.End(a1, EndReleased) {
		t.Fatal("second end reported it live")
	}
	if tab.Count() != 2 || tab.UserCount("alice") != 1 {
		t.Fatalf("count=%d alice=%d after end", tab.Count(), tab.UserCount("alice"))
	}
	if _, ok := tab.Get(tuple(1)); ok {
		t.Fatal("an ended allocation is still found")
	}
	if _, ok := tab.ByRelayed(relay4(50001)); ok {
		t.Fatal("an ended allocation's relayed address is still found")
	}
	k, err := tab.Admit("alice", lo, UDP)
	if err != nil {
		t.Fatalf("alice refused after release: %v", err)
	}
	k.Cancel()

	tab.SetLimits(Limits{})
	insert(t, tab, "alice", tuple(4), v4(50004), time.Minute)
	insert(t, tab, "alice", tuple(5), v4(50005), time.Minute)
	if _, err := tab.Admit("alice", lo, UDP); err != nil {
		t.Fatalf("unlimited table refused: %v", err)
	}
}

func TestTablePerIPQuota(t *testing.T) {
	tab := New(Limits{PerIP: 2}, Hooks{})
	at := func(ip string, port uint16, tcp bool) netaddr.FiveTuple {
		return netaddr.FiveTuple{Client: netip.AddrPortFrom(netip.MustParseAddr(ip), port), Server: server, TCP: tcp}
	}
	a := insert(t, tab, "a", at("127.0.0.1", 1, false), v4(1), time.Minute)
	insert(t, tab, "b", at("127.0.0.1", 2, true), v4(2), time.Minute)
	if _, err := tab.Admit("c", netip.MustParseAddr("::ffff:127.0.0.1"), UDP); !errors.Is(err, ErrIPQuota) {
		t.Fatalf("third allocation from 127.0.0.1: %v, want ErrIPQuota", err)
	}
	if _, err := tab.Admit("c", netip.MustParseAddr("192.0.2.9"), UDP); err != nil {
		t.Fatalf("another address refused: %v", err)
	}
	tab.End(a, EndReleased)
	if _, err := tab.Admit("c", lo, UDP); err != nil {
		t.Fatalf("after release: %v", err)
	}
}

// TestTablePerIPQuotaIPv6Slash64: an IPv6 client rotating through its
// /64 is one client for the quota; the next /64 is another.
func TestTablePerIPQuotaIPv6Slash64(t *testing.T) {
	tab := New(Limits{PerIP: 2}, Hooks{})
	at := func(ip string, port uint16) netaddr.FiveTuple {
		return netaddr.FiveTuple{Client: netip.AddrPortFrom(netip.MustParseAddr(ip), port), Server: server}
	}
	a := insert(t, tab, "a", at("2001:db8:1:2::1", 1), v4(1), time.Minute)
	insert(t, tab, "a", at("2001:db8:1:2:ffff::9", 2), v4(2), time.Minute)
	if _, err := tab.Admit("a", netip.MustParseAddr("2001:db8:1:2:1234::7"), UDP); !errors.Is(err, ErrIPQuota) {
		t.Fatalf("third allocation from the same /64: %v, want ErrIPQuota", err)
	}
	k, err := tab.Admit("a", netip.MustParseAddr("2001:db8:1:3::1"), UDP)
	if err != nil {
		t.Fatalf("the next /64 refused: %v", err)
	}
	k.Cancel()
	tab.End(a, EndReleased)
	if _, err := tab.Admit("a", netip.MustParseAddr("2001:db8:1:2::abcd"), UDP); err != nil {
		t.Fatalf("after release the /64 refused: %v", err)
	}
}

// TestTablePerPrefixQuota: the /64s of one IPv6 /48, and the addresses of
// one IPv4 /24, share one aggregate quota; another network is not counted
// with them, and a release frees its share.
func TestTablePerPrefixQuota(t *testing.T) {
	tab := New(Limits{PerIP: 2, PerPrefix: 3}, Hooks{})
	at := func(ip string) netaddr.FiveTuple {
		return netaddr.FiveTuple{Client: netip.AddrPortFrom(netip.MustParseAddr(ip), 1), Server: server}
	}
	var last *Allocation
	for i, c := range []string{"2001:db8:1:2::1", "2001:db8:1:2::2", "2001:db8:1:ff00::1"} {
		last = insert(t, tab, "a", at(c), v4(uint16(10+i)), time.Minute)
	}
	if _, err := tab.Admit("a", netip.MustParseAddr("2001:db8:1:ffff::1"), UDP); !errors.Is(err, ErrPrefixQuota) {
		t.Fatalf("fourth allocation from a fresh /64 of the same /48: %v, want ErrPrefixQuota", err)
	}
	k, err := tab.Admit("a", netip.MustParseAddr("2001:db8:2::1"), UDP)
	if err != nil {
		t.Fatalf("another /48 refused: %v", err)
	}
	k.Cancel()
	tab.End(last, EndReleased)
	k, err = tab.Admit("a", netip.MustParseAddr("2001:db8:1:ffff::1"), UDP)
	if err != nil {
		t.Fatalf("after a release the /48 refused: %v", err)
	}
	k.Cancel()
	for i, c := range []string{"192.0.2.1", "192.0.2.2", "192.0.2.3"} {
		insert(t, tab, "a", at(c), v4(uint16(20+i)), time.Minute)
	}
	if _, err := tab.Admit("a", netip.MustParseAddr("::ffff:192.0.2.200"), UDP); !errors.Is(err, ErrPrefixQuota) {
		t.Fatalf("fourth allocation from the same IPv4 /24: %v, want ErrPrefixQuota", err)
	}
	if _, err := tab.Admit("a", netip.MustParseAddr("192.0.3.1"), UDP); err != nil {
		t.Fatalf("the next /24 refused: %v", err)
	}
}

// TestTableInsertRefusesATakenFiveTuple: a second insert on a taken
// 5-tuple is refused (437 Allocation Mismatch) and its ticket stays to be
// cancelled.
func TestTableInsertRefusesATakenFiveTuple(t *testing.T) {
	tab := New(Limits{}, Hooks{})
	insert(t, tab, "a", tuple(1), v4(1), time.Minute)
	k, _ := tab.Admit("b", tuple(1).Client.Addr(), UDP)
	if err := k.Insert(&Allocation{Tuple: tuple(1), User: "b"}, v4(2), time.Minute, t0); !errors.Is(err, ErrExists) {
		t.Fatalf("second insert at one 5-tuple: %v, want ErrExists", err)
	}
	if err := k.Insert(&Allocation{Tuple: tuple(2), User: "b"}, v4(1), time.Minute, t0); !errors.Is(err, ErrRelayInUse) {
		t.Fatalf("insert on a relayed address in use: %v, want ErrRelayInUse", err)
	}
	if err := k.Insert(&Allocation{Tuple: tuple(2), User: "b"}, [2]netip.AddrPort{relay6(2)}, time.Minute, t0); !errors.Is(err, ErrFamilyMismatch) {
		t.Fatalf("an IPv6 address in the IPv4 slot: %v, want ErrFamilyMismatch", err)
	}
	if tab.Count() != 2 {
		t.Fatalf("count %d with one live and one admitted, want 2", tab.Count())
	}
	k.Cancel()
	if tab.Count() != 1 || tab.UserCount("b") != 0 {
		t.Fatalf("count=%d b=%d after cancel", tab.Count(), tab.UserCount("b"))
	}
}

// TestTableUDPAndTCPFromOneAddress: the same address and port number over
// UDP and over TCP are two 5-tuples, and two allocations.
func TestTableUDPAndTCPFromOneAddress(t *testing.T) {
	tab := New(Limits{}, Hooks{})
	tcp := tuple(5000)
	tcp.TCP = true
	u := insert(t, tab, "a", tuple(5000), v4(1), time.Minute)
	insert(t, tab, "b", tcp, v4(2), time.Minute)
	if tab.Count() != 2 {
		t.Fatalf("count %d, want 2", tab.Count())
	}
	tab.End(u, EndReleased)
	_, tcpLive := tab.Get(tcp)
	_, udpLive := tab.Get(tuple(5000))
	if !tcpLive || udpLive || tab.Count() != 1 {
		t.Fatalf("after ending the UDP allocation: TCP live %v, UDP live %v, count %d", tcpLive, udpLive, tab.Count())
	}
}

func TestTableChangedIsCoalescedAndNeverBlocks(t *testing.T) {
	tab := New(Limits{}, Hooks{})
	var first *Allocation
	for i := range 100 { // would deadlock if a notification blocked
		a := insert(t, tab, "a", tuple(uint16(i+1)), v4(uint16(i+1)), time.Minute)
		if first == nil {
			first = a
		}
	}
	select {
	case <-tab.Changed():
	default:
		t.Fatal("no change notification after Insert")
	}
	select {
	case <-tab.Changed():
		t.Fatal("notifications were not coalesced")
	default:
	}
	tab.End(first, EndReleased)
	select {
	case <-tab.Changed():
	default:
		t.Fatal("no change notification after End")
	}
}

func TestTableEndKeepsTheFirstReason(t *testing.T) {
	var reasons []EndReason
	tab := New(Limits{}, Hooks{Ended: func(_ *Allocation, why EndReason) { reasons = append(reasons, why) }})
	a := insert(t, tab, "a", tuple(1), v4(1), time.Minute)
	if !tab.End(a, EndDisconnected) || tab.End(a, EndReleased) {
		t.Fatal("End reported the wrong call as the one that ended it")
	}
	if why, ended := a.Ended(); !ended || why != EndDisconnected {
		t.Fatalf("ended %v, %v; want the first reason, disconnected", why, ended)
	}
	if !slices.Equal(reasons, []EndReason{EndDisconnected}) {
		t.Fatalf("Ended hook saw %v, want [disconnected] once", reasons)
	}
	b := insert(t, tab, "b", tuple(2), v4(2), time.Minute)
	insert(t, tab, "c", tuple(3), v4(3), time.Minute)
	if n := tab.EndWhere(func(x *Allocation) bool { return x.User == "b" }, EndDisconnected); n != 1 {
		t.Fatalf("EndWhere ended %d, want 1", n)
	}
	if why, _ := b.Ended(); why != EndDisconnected || tab.Count() != 1 {
		t.Fatalf("b ended %v, count %d", why, tab.Count())
	}
}

// TestEndReasonsAreTheUsageRecordValues: the names usage records have
// always written.
func TestEndReasonsAreTheUsageRecordValues(t *testing.T) {
	want := map[EndReason]string{EndReleased: "released", EndExpired: "expired",
		EndConnectionClosed: "connection_closed", EndDisconnected: "disconnected",
		EndDrainDeadline: "drain_deadline", EndShutdown: "shutdown", 0: ""}
	for r, s := range want {
		if r.String() != s {
			t.Errorf("%d.String() = %q, want %q", r, r.String(), s)
		}
	}
}

func TestTableListFiltersByUserOldestFirst(t *testing.T) {
	tab := New(Limits{}, Hooks{})
	for i, c := range []struct {
		user    string
		created time.Duration
	}{{"a", 2 * time.Second}, {"b", time.Second}, {"a", 0}} {
		k, _ := tab.Admit(c.user, lo, UDP)
		a := &Allocation{Tuple: tuple(uint16(i + 1)), User: c.user, Created: t0.Add(c.created)}
		if err := k.Insert(a, v4(uint16(50001+i)), time.Minute, t0); err != nil {
			t.Fatal(err)
		}
	}
	var ports []uint16
	for _, info := range tab.List("a") {
		ports = append(ports, info.Relayed[0].Port())
	}
	if !slices.Equal(ports, []uint16{50003, 50001}) {
		t.Fatalf("alice's relays %v, want [50003 50001]", ports)
	}
	all := tab.List("")
	if len(all) != 3 || all[1].Client.String() != "192.0.2.1:2" || all[1].Relay.String() != "198.51.100.1:50002" {
		t.Fatalf("all users: %+v", all)
	}
}

func TestTableExpiry(t *testing.T) {
	tab := New(Limits{}, Hooks{})
	if e := tab.Expiry(); !e.Oldest.IsZero() || !e.Next.IsZero() || !e.Last.IsZero() {
		t.Fatalf("empty table: %+v, want zero times", e)
	}
	a := insert(t, tab, "a", tuple(1), dual(1), 10*time.Minute)
	b := insert(t, tab, "b", tuple(2), v4(2), 5*time.Minute)
	// A refresh of one family moves the allocation's end to its last one.
	if _, err := tab.Refresh(a, bindings.V6, 20*time.Minute, t0); err != nil {
		t.Fatal(err)
	}
	e := tab.Expiry()
	if !e.Oldest.Equal(t0) || !e.Next.Equal(t0.Add(5*time.Minute)) || !e.Last.Equal(t0.Add(20*time.Minute)) {
		t.Errorf("expiry %+v, want oldest t0, next t0+5m, last t0+20m", e)
	}
	tab.End(b, EndReleased)
	if e := tab.Expiry(); !e.Next.Equal(t0.Add(20 * time.Minute)) {
		t.Errorf("after b ended: %+v, want next t0+20m", e)
	}
}
