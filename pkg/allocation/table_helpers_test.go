package allocation

import (
	"net/netip"
	"testing"
	"time"

	"github.com/turnd/turnd/internal/netaddr"
)

var (
	t0     = time.Unix(1_700_000_000, 0)
	server = netip.MustParseAddrPort("192.0.2.10:3478")
	lo     = netip.MustParseAddr("127.0.0.1")
)

// tuple is a UDP client 5-tuple from 192.0.2.1:port.
func tuple(port uint16) netaddr.FiveTuple {
	return netaddr.FiveTuple{Client: netip.AddrPortFrom(netip.MustParseAddr("192.0.2.1"), port), Server: server}
}

func relay4(port uint16) netip.AddrPort {
	return netip.AddrPortFrom(netip.MustParseAddr("198.51.100.1"), port)
}

func relay6(port uint16) netip.AddrPort {
	return netip.AddrPortFrom(netip.MustParseAddr("2001:db8::1"), port)
}

// insert admits and inserts an allocation of user at tp with an IPv4
// relayed address on port, alive for lifetime from t0.
func insert(t *testing.T, tab *Table, user string, tp netaddr.FiveTuple, relayed [2]netip.AddrPort, lifetime time.Duration) *Allocation {
	t.Helper()
	tr := UDP
	if tp.TCP {
		tr = TCP
	}
	k, err := tab.Admit(user, tp.Client.Addr(), tr)
	if err != nil {
		t.Fatalf("admit %s at %v: %v", user, tp.Client, err)
	}
	a := &Allocation{Tuple: tp, Transport: tr, User: user, Created: t0}
	if err := k.Insert(a, relayed, lifetime, t0); err != nil {
		t.Fatalf("insert %s at %v: %v", user, tp.Client, err)
	}
	return a
}

func v4(port uint16) [2]netip.AddrPort { return [2]netip.AddrPort{relay4(port)} }

func dual(port uint16) [2]netip.AddrPort { return [2]netip.AddrPort{relay4(port), relay6(port)} }
