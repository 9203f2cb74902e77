package server

import (
	"net"
	"net/netip"
	"testing"

	"github.com/turnd/turnd/pkg/peerfilter"
)

// TestForbiddenDoesNotAllocate: the relay asks forbidden for every packet
// pion sends to a peer; it must cost no allocation, allowed or not.
func TestForbiddenDoesNotAllocate(t *testing.T) {
	s := &Server{}
	s.own.add(&net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 3478})
	f, err := peerfilter.New(peerfilter.Options{AllowLoopback: true, Denied: []string{"10.0.0.0/8", "fd00::/8"}})
	if err != nil {
		t.Fatal(err)
	}
	s.peers.Store(f)
	for _, tc := range []struct {
		peer string
		want bool
	}{
		{"127.0.0.1:3478", true},
		{"10.1.2.3:5000", true},
		{"[::ffff:127.0.0.1]:5000", false},
		{"[2001:4860::8888]:5000", false},
	} {
		ap := netip.MustParseAddrPort(tc.peer)
		var got bool
		if a := testing.AllocsPerRun(200, func() { got = s.forbidden(ap) }); a != 0 {
			t.Errorf("forbidden(%s): %.1f allocations, want 0", tc.peer, a)
		}
		if got != tc.want {
			t.Errorf("forbidden(%s) = %v, want %v", tc.peer, got, tc.want)
		}
	}
}
