package edge

import (
	"net"
	"testing"
)

// TestProxiedConnRemoteAddrDoesNotAllocate: a stream's address is asked
// for wherever its client is named; behind a PROXY-protocol proxy that must
// cost no allocation, as it does not on a plain TCP connection.
func TestProxiedConnRemoteAddrDoesNotAllocate(t *testing.T) {
	c := &proxiedConn{client: &net.TCPAddr{IP: net.IPv4(192, 0, 2, 7), Port: 40000}}
	var got net.Addr
	if a := testing.AllocsPerRun(200, func() { got = c.RemoteAddr() }); a != 0 {
		t.Errorf("RemoteAddr: %.1f allocations per call, want 0", a)
	}
	if got.String() != "192.0.2.7:40000" {
		t.Errorf("RemoteAddr %v, want the PROXY header's client", got)
	}
}
