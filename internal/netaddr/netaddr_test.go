package netaddr_test

import (
	"net"
	"net/netip"
	"testing"

	"github.com/turnd/turnd/internal/netaddr"
)

// TestOneClientOneKey: the forms one client arrives in give one 5-tuple;
// the transport and either side tell 5-tuples apart.
func TestOneClientOneKey(t *testing.T) {
	server := &net.UDPAddr{IP: net.IPv4(192, 0, 2, 10), Port: 3478}
	v4 := &net.UDPAddr{IP: net.IPv4(192, 0, 2, 1), Port: 5000}
	mapped := &net.UDPAddr{IP: net.ParseIP("::ffff:192.0.2.1"), Port: 5000}
	tcp := &net.TCPAddr{IP: net.IPv4(192, 0, 2, 1), Port: 5000}
	tcpServer := &net.TCPAddr{IP: net.IPv4(192, 0, 2, 10), Port: 3478}

	if netaddr.Of(v4, server) != netaddr.Of(mapped, server) {
		t.Error("an IPv4-mapped client is another client")
	}
	if got := netaddr.Of(mapped, server).Client; got != netip.MustParseAddrPort("192.0.2.1:5000") {
		t.Errorf("client %v, want it unmapped", got)
	}
	if netaddr.Of(v4, server) == netaddr.Of(tcp, tcpServer) || !netaddr.Of(tcp, tcpServer).TCP {
		t.Error("a TCP client with the same addresses is the same 5-tuple")
	}
	if netaddr.Of(v4, server) == netaddr.Of(v4, &net.UDPAddr{IP: net.IPv4(192, 0, 2, 11), Port: 3478}) {
		t.Error("two server addresses make one 5-tuple")
	}
	if !netaddr.Of(nil, tcpServer).TCP || netaddr.Of(nil, server).TCP {
		t.Error("with no client, the transport is not the server's")
	}
	if (netaddr.Of(nil, nil) != netaddr.FiveTuple{}) {
		t.Error("no addresses are not the zero 5-tuple")
	}
}

// TestAddrPortOfOtherAddresses: nil, a typed nil and addresses of no IP
// transport give the zero values, never a panic.
func TestAddrPortOfOtherAddresses(t *testing.T) {
	var typedNil *net.UDPAddr
	for _, a := range []net.Addr{nil, typedNil, &net.UnixAddr{Name: "/x", Net: "unix"}, &net.IPAddr{IP: net.IPv4(192, 0, 2, 1)}} {
		if ap := netaddr.AddrPort(a); ap.IsValid() {
			t.Errorf("%#v: %v", a, ap)
		}
		if ip := netaddr.IP(a); ip.IsValid() {
			t.Errorf("%#v: %v", a, ip)
		}
	}
	if ip := netaddr.IP(&net.TCPAddr{IP: net.ParseIP("::ffff:192.0.2.1"), Port: 1}); ip != netip.MustParseAddr("192.0.2.1") {
		t.Errorf("IP %v, want it unmapped", ip)
	}
}
