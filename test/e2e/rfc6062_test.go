package e2e

import (
	"net"
	"testing"

	"github.com/turnd/turnd/internal/testturn"
)

// TestConnectCannotStallOrTunnel: RFC 6062 Connect over UDP is answered 400
// at once (pion would dial inside the socket's read loop, freezing every
// client of the socket behind a peer that drops SYNs); a TCP client
// holding a UDP allocation cannot open a TCP pipe (it reached turnd's own
// HTTP endpoint); a TCP allocation cannot Connect to turnd's own sockets.
func TestConnectCannotStallOrTunnel(t *testing.T) {
	srv := start(t, testConfig())
	silent := testturn.SilentPeer(t)

	u := testturn.Dial(t, "udp", srv.UDP, "demo", "demo")
	u.MustAllocate()
	if code := testturn.ErrorCode(u.Connect(silent)); code != 400 {
		t.Fatalf("Connect over UDP: %d, want 400", code)
	}
	if testturn.Dial(t, "udp", srv.UDP, "demo", "demo").BindingMapped() == nil {
		t.Fatal("another UDP client got no Binding answer")
	}

	http := tcpAddr(t, srv.HTTP)
	udpAlloc := testturn.Dial(t, "tcp", srv.TCP, "demo", "demo")
	udpAlloc.MustAllocate()
	if code := testturn.ErrorCode(udpAlloc.Connect(http)); code != 400 {
		t.Fatalf("Connect on a UDP allocation to turnd's HTTP: %d, want 400", code)
	}

	tcpAlloc := testturn.Dial(t, "tcp", srv.TCP, "demo", "demo")
	if code := testturn.ErrorCode(tcpAlloc.AllocateTCP()); code != 0 {
		t.Fatalf("tcp allocation: %d", code)
	}
	for _, own := range []string{srv.HTTP, srv.TCP} {
		resp := tcpAlloc.Connect(tcpAddr(t, own))
		if code := testturn.ErrorCode(resp); code != 403 || !tcpAlloc.Signed(resp) {
			t.Errorf("Connect to turnd's own %s: %d, want signed 403", own, code)
		}
	}
}

func tcpAddr(t *testing.T, s string) *net.TCPAddr {
	t.Helper()
	a, err := net.ResolveTCPAddr("tcp", s)
	if err != nil {
		t.Fatal(err)
	}
	return a
}
