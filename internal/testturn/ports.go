package testturn

import (
	"net"
	"testing"
)

// FreePort returns a loopback port number that was free for both UDP and
// TCP a moment ago: a TURN server listens on both with one number (3478),
// and a client host may use one number for both too.
func FreePort(t testing.TB) int {
	t.Helper()
	for i := 0; i < 20; i++ {
		port := FreeTCPPort(t)
		c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: port})
		if err == nil {
			c.Close()
			return port
		}
	}
	t.Fatal("no port free for both UDP and TCP")
	return 0
}

// FreeTCPPort returns a loopback TCP port that was free a moment ago.
func FreeTCPPort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}
