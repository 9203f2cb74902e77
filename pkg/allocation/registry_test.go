package allocation

import (
	"errors"
	"net"
	"net/netip"
	"slices"
	"testing"
	"time"
)

func udp(port int) net.Addr { return &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: port} }

func TestRegistryCountsAndQuotas(t *testing.T) {
	r := NewRegistry(Limits{Total: 3, PerUser: 2})
	srv := udp(3478)

	if err := r.Admit("alice", lo); err != nil {
		t.Fatalf("empty registry refused: %v", err)
	}
	r.Add(Info{Client: udp(1), Server: srv, Transport: UDP, User: "alice"})
	r.Add(Info{Client: udp(2), Server: srv, Transport: TCP, User: "alice"})
	if err := r.Admit("alice", lo); !errors.Is(err, ErrUserQuota) {
		t.Fatalf("third allocation of alice: got %v, want ErrUserQuota", err)
	}
	if err := r.Admit("bob", lo); err != nil {
		t.Fatalf("bob refused: %v", err)
	}
	r.Add(Info{Client: udp(3), Server: srv, Transport: TLS, User: "bob"})
	if err := r.Admit("carol", lo); !errors.Is(err, ErrTotalQuota) {
		t.Fatalf("fourth allocation: got %v, want ErrTotalQuota", err)
	}
	if got := r.ByTransport(); got[UDP] != 1 || got[TCP] != 1 || got[TLS] != 1 {
		t.Fatalf("by transport = %v", got)
	}

	if _, ok := r.Remove(udp(1), srv); !ok {
		t.Fatal("remove of a live allocation reported absent")
	}
	if _, ok := r.Remove(udp(1), srv); ok {
		t.Fatal("second remove reported present")
	}
	if r.Count() != 2 || r.UserCount("alice") != 1 {
		t.Fatalf("count=%d alice=%d after remove", r.Count(), r.UserCount("alice"))
	}
	if err := r.Admit("alice", lo); err != nil {
		t.Fatalf("alice refused after release: %v", err)
	}

	r.SetLimits(Limits{})
	r.Add(Info{Client: udp(4), Server: srv, User: "alice"})
	r.Add(Info{Client: udp(5), Server: srv, User: "alice"})
	if err := r.Admit("alice", lo); err != nil {
		t.Fatalf("unlimited registry refused: %v", err)
	}
}

var lo = netip.MustParseAddr("127.0.0.1")

func TestRegistryPerIPQuota(t *testing.T) {
	r := NewRegistry(Limits{PerIP: 2})
	other := &net.UDPAddr{IP: net.IPv4(192, 0, 2, 9), Port: 1}
	r.Add(Info{Client: udp(1), Server: udp(3478), User: "a"})
	r.Add(Info{Client: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 2}, Server: udp(3478), User: "b"})
	if err := r.Admit("c", netip.MustParseAddr("::ffff:127.0.0.1")); !errors.Is(err, ErrIPQuota) {
		t.Fatalf("third allocation from 127.0.0.1: %v, want ErrIPQuota", err)
	}
	if err := r.Admit("c", other.AddrPort().Addr()); err != nil {
		t.Fatalf("another address refused: %v", err)
	}
	r.Remove(udp(1), udp(3478))
	if err := r.Admit("c", lo); err != nil || r.IPCount(lo) != 1 {
		t.Fatalf("after release: %v, count %d", err, r.IPCount(lo))
	}
}

// TestRegistryPerIPQuotaIPv6Slash64: an IPv6 client rotating through its
// /64 is one client for the quota; the next /64 is another.
func TestRegistryPerIPQuotaIPv6Slash64(t *testing.T) {
	r := NewRegistry(Limits{PerIP: 2})
	v6 := func(s string, port int) net.Addr { return &net.UDPAddr{IP: net.ParseIP(s), Port: port} }
	r.Add(Info{Client: v6("2001:db8:1:2::1", 1), Server: udp(3478), User: "a"})
	r.Add(Info{Client: v6("2001:db8:1:2:ffff::9", 2), Server: udp(3478), User: "a"})
	if err := r.Admit("a", netip.MustParseAddr("2001:db8:1:2:1234::7")); !errors.Is(err, ErrIPQuota) {
		t.Fatalf("third allocation from the same /64: %v, want ErrIPQuota", err)
	}
	if err := r.Admit("a", netip.MustParseAddr("2001:db8:1:3::1")); err != nil {
		t.Fatalf("the next /64 refused: %v", err)
	}
	r.Remove(v6("2001:db8:1:2::1", 1), udp(3478))
	if n := r.IPCount(netip.MustParseAddr("2001:db8:1:2::abcd")); n != 1 {
		t.Fatalf("after release the /64 counts %d, want 1", n)
	}
}

// TestRegistryPerPrefixQuota: the /64s of one IPv6 /48, and the addresses
// of one IPv4 /24, share one aggregate quota above the per-address one;
// another network is not counted with them, and a release frees its share.
func TestRegistryPerPrefixQuota(t *testing.T) {
	r := NewRegistry(Limits{PerIP: 2, PerPrefix: 3})
	addr := func(s string) net.Addr { return &net.UDPAddr{IP: net.ParseIP(s), Port: 1} }
	for _, c := range []string{"2001:db8:1:2::1", "2001:db8:1:2::2", "2001:db8:1:ff00::1"} {
		if err := r.Admit("a", netip.MustParseAddr(c)); err != nil {
			t.Fatalf("allocation from %s under the quotas: %v", c, err)
		}
		r.Add(Info{Client: addr(c), Server: udp(3478), User: "a"})
	}
	if err := r.Admit("a", netip.MustParseAddr("2001:db8:1:ffff::1")); !errors.Is(err, ErrPrefixQuota) {
		t.Fatalf("fourth allocation from a fresh /64 of the same /48: %v, want ErrPrefixQuota", err)
	}
	if err := r.Admit("a", netip.MustParseAddr("2001:db8:2::1")); err != nil {
		t.Fatalf("another /48 refused: %v", err)
	}
	if n := r.PrefixCount(netip.MustParseAddr("2001:db8:1:abcd::1")); n != 3 {
		t.Fatalf("the /48 counts %d, want 3", n)
	}
	r.Remove(addr("2001:db8:1:ff00::1"), udp(3478))
	if err := r.Admit("a", netip.MustParseAddr("2001:db8:1:ffff::1")); err != nil {
		t.Fatalf("after a release the /48 refused: %v", err)
	}

	for _, c := range []string{"192.0.2.1", "192.0.2.2", "192.0.2.3"} {
		r.Add(Info{Client: addr(c), Server: udp(3478), User: "a"})
	}
	if err := r.Admit("a", netip.MustParseAddr("::ffff:192.0.2.200")); !errors.Is(err, ErrPrefixQuota) {
		t.Fatalf("fourth allocation from the same IPv4 /24: %v, want ErrPrefixQuota", err)
	}
	if err := r.Admit("a", netip.MustParseAddr("192.0.3.1")); err != nil {
		t.Fatalf("the next /24 refused: %v", err)
	}
}

// TestRegistryReAddSameFiveTupleKeepsCounts: a second Add for a 5-tuple
// replaces the first, counted once, and returns it, so what the caller
// held for it can be let go.
func TestRegistryReAddSameFiveTupleKeepsCounts(t *testing.T) {
	r := NewRegistry(Limits{})
	if _, replaced := r.Add(Info{Client: udp(1), Server: udp(2), User: "a"}); replaced {
		t.Fatal("the first Add replaced something")
	}
	old, replaced := r.Add(Info{Client: udp(1), Server: udp(2), User: "b"})
	if !replaced || old.User != "a" {
		t.Fatalf("the second Add replaced %+v (%v), want a's entry", old, replaced)
	}
	if r.Count() != 1 || r.UserCount("a") != 0 || r.UserCount("b") != 1 {
		t.Fatalf("count=%d a=%d b=%d", r.Count(), r.UserCount("a"), r.UserCount("b"))
	}
}

// TestRegistryUDPAndTCPFromOneAddress: the same address and port number
// over UDP and over TCP are two 5-tuples, and two allocations.
func TestRegistryUDPAndTCPFromOneAddress(t *testing.T) {
	r := NewRegistry(Limits{})
	tcp := func(port int) net.Addr { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: port} }
	r.Add(Info{Client: udp(5000), Server: udp(3478), Transport: UDP, User: "a"})
	r.Add(Info{Client: tcp(5000), Server: tcp(3478), Transport: TCP, User: "b"})
	if r.Count() != 2 {
		t.Fatalf("count %d, want 2", r.Count())
	}
	if _, ok := r.Remove(udp(5000), udp(3478)); !ok {
		t.Fatal("the UDP allocation was not found")
	}
	if !r.Has(tcp(5000), tcp(3478)) || r.Has(udp(5000), udp(3478)) || r.Count() != 1 {
		t.Fatalf("after removing the UDP allocation: TCP present %v, UDP present %v, count %d; want true, false, 1",
			r.Has(tcp(5000), tcp(3478)), r.Has(udp(5000), udp(3478)), r.Count())
	}
}

func TestRegistryChangedIsCoalescedAndNeverBlocks(t *testing.T) {
	r := NewRegistry(Limits{})
	for i := 0; i < 100; i++ { // would deadlock if notify blocked
		r.Add(Info{Client: udp(i + 1), Server: udp(3478)})
	}
	select {
	case <-r.Changed():
	default:
		t.Fatal("no change notification after Add")
	}
	select {
	case <-r.Changed():
		t.Fatal("notifications were not coalesced")
	default:
	}
	r.Remove(udp(1), udp(3478))
	select {
	case <-r.Changed():
	default:
		t.Fatal("no change notification after Remove")
	}
}

func TestRegistryMarkEndingKeepsTheFirstReason(t *testing.T) {
	r := NewRegistry(Limits{})
	r.Add(Info{Client: udp(1), Server: udp(3478), User: "a"})
	if !r.MarkEnding(udp(1), udp(3478), "disconnected") || r.MarkEnding(udp(2), udp(3478), "released") {
		t.Fatal("MarkEnding reported the wrong allocations live")
	}
	r.MarkEnding(udp(1), udp(3478), "released")
	if info, _ := r.Remove(udp(1), udp(3478)); info.Ending != "disconnected" {
		t.Fatalf("ending %q, want the first reason, disconnected", info.Ending)
	}
}

func TestRegistryListFiltersByUserOldestFirst(t *testing.T) {
	r := NewRegistry(Limits{})
	t0 := time.Unix(1000, 0)
	r.Add(Info{Client: udp(1), Server: udp(3478), User: "a", Created: t0.Add(2 * time.Second), Relay: udp(50001)})
	r.Add(Info{Client: udp(2), Server: udp(3478), User: "b", Created: t0.Add(time.Second), Relay: udp(50002)})
	r.Add(Info{Client: udp(3), Server: udp(3478), User: "a", Created: t0, Relay: udp(50003)})
	var ports []int
	for _, info := range r.List("a") {
		ports = append(ports, info.Relay.(*net.UDPAddr).Port)
	}
	if !slices.Equal(ports, []int{50003, 50001}) {
		t.Fatalf("alice's relays %v, want [50003 50001]", ports)
	}
	if n := len(r.List("")); n != 3 {
		t.Fatalf("all users: %d allocations, want 3", n)
	}
}

func TestRegistryRemoveAllAfterMarkAllEnding(t *testing.T) {
	r := NewRegistry(Limits{})
	r.Add(Info{Client: udp(1), Server: udp(3478), User: "a", Ending: "released"})
	r.Add(Info{Client: udp(2), Server: udp(3478), User: "a"})
	r.MarkAllEnding("shutdown")
	got := map[string]int{}
	for _, info := range r.RemoveAll() {
		got[info.Ending]++
	}
	if got["released"] != 1 || got["shutdown"] != 1 || r.Count() != 0 || r.UserCount("a") != 0 {
		t.Fatalf("endings %v, count %d, alice %d", got, r.Count(), r.UserCount("a"))
	}
	<-r.Changed()
}
