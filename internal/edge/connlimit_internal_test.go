package edge

import (
	"net"
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
