package edge

import (
	"net"
	"net/netip"
	"testing"
)

// An IPv6 host holds a whole /64 and can rotate through it, so its
// connections are counted per /64, like its rate limit and allocations.
func TestConnectionsPerIPv6Slash64(t *testing.T) {
	var s streamConns
	s.limits.Store(&ConnLimits{PerIP: 2})
	from := func(ip string) string {
		_, refused := s.admitConn(&net.TCPAddr{IP: net.ParseIP(ip), Port: 40000})
		return refused
	}
	for _, ip := range []string{"2001:db8:1:2::1", "2001:db8:1:2::2"} {
		if r := from(ip); r != "" {
			t.Fatalf("%s refused (%s) under the cap", ip, r)
		}
	}
	if r := from("2001:db8:1:2:ffff::3"); r != RefuseConnectionsPerIP {
		t.Errorf("third connection from the same /64: refused %q, want %q", r, RefuseConnectionsPerIP)
	}
	if r := from("2001:db8:1:3::1"); r != "" {
		t.Errorf("another /64 refused (%s)", r)
	}
}

// The /64s of one IPv6 /48 (and the addresses of one IPv4 /24) share one
// aggregate cap: fresh /64s stop at it, another /48 does not, and a
// connection that closes frees its share.
func TestConnectionsPerPrefix(t *testing.T) {
	var s streamConns
	s.limits.Store(&ConnLimits{PerIP: 2, PerPrefix: 3})
	from := func(ip string) (netip.Addr, string) {
		return s.admitConn(&net.TCPAddr{IP: net.ParseIP(ip), Port: 40000})
	}
	var booked []netip.Addr
	for _, ip := range []string{"2001:db8:1:1::1", "2001:db8:1:2::1", "2001:db8:1:ff00::1"} {
		a, r := from(ip)
		if r != "" {
			t.Fatalf("%s refused (%s) under the caps", ip, r)
		}
		booked = append(booked, a)
	}
	if _, r := from("2001:db8:1:ffff::1"); r != RefuseConnectionsPerPrefix {
		t.Errorf("a fourth /64 of the same /48: refused %q, want %q", r, RefuseConnectionsPerPrefix)
	}
	if _, r := from("2001:db8:2::1"); r != "" {
		t.Errorf("another /48 refused (%s)", r)
	}
	s.releaseConn(booked[0])
	if _, r := from("2001:db8:1:ffff::1"); r != "" {
		t.Errorf("after a close, the /48 refused (%s)", r)
	}
	for _, ip := range []string{"192.0.2.1", "192.0.2.2", "192.0.2.3"} {
		if _, r := from(ip); r != "" {
			t.Fatalf("%s refused (%s) under the caps", ip, r)
		}
	}
	if _, r := from("192.0.2.250"); r != RefuseConnectionsPerPrefix {
		t.Errorf("a fourth address of the same IPv4 /24: refused %q, want %q", r, RefuseConnectionsPerPrefix)
	}
}
