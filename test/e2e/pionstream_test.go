package e2e

import (
	"crypto/tls"
	"net"
	"testing"

	"github.com/pion/logging"
	"github.com/pion/stun/v4"
	"github.com/pion/turn/v5"
)

// pionDial is pion's client to server over "udp", "tcp" or "tls" (with
// tlsCfg), its frames seen by a wireTap. It returns the client's own
// address (the remote end of its connection at the server).
func pionDial(t *testing.T, network, server string, tlsCfg *tls.Config) (*turn.Client, *wireTap, string) {
	t.Helper()
	tap := &wireTap{}
	var local string
	switch network {
	case "udp":
		conn, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
		if err != nil {
			t.Fatal(err)
		}
		tap.PacketConn, local = conn, conn.LocalAddr().String()
	case "tcp", "tls":
		conn, err := net.Dial("tcp4", server)
		if err != nil {
			t.Fatal(err)
		}
		local = conn.LocalAddr().String()
		if network == "tls" {
			tc := tls.Client(conn, tlsCfg)
			if err := tc.Handshake(); err != nil {
				t.Fatalf("tls handshake: %v", err)
			}
			conn = tc
		}
		tap.PacketConn = turn.NewSTUNConn(conn)
	default:
		t.Fatalf("network %q", network)
	}
	quiet := logging.NewDefaultLoggerFactory()
	quiet.DefaultLogLevel = logging.LogLevelWarn
	c, err := turn.NewClient(&turn.ClientConfig{
		TURNServerAddr: server, Username: "demo", Password: "demo",
		Conn: tap, LoggerFactory: quiet,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Listen(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(); tap.Close() })
	return c, tap, local
}

// relayStream allocates through c, permits peer and starts a numbered
// stream to it; it returns once the first echo came back.
func relayStream(t *testing.T, c *turn.Client, peer *countingPeer) (*numbered, net.PacketConn, *net.UDPAddr) {
	t.Helper()
	pc, err := c.Allocate()
	if err != nil {
		t.Fatalf("allocate: %v", err)
	}
	if err := c.CreatePermission(peer.addr()); err != nil {
		t.Fatalf("create permission: %v", err)
	}
	s := startNumbered(pc, peer.addr())
	t.Cleanup(func() {
		select {
		case <-s.stop:
		default:
			close(s.stop)
			close(s.quit)
		}
	})
	s.waitEchoes(t, 1, readDeadline)
	return s, pc, pc.LocalAddr().(*net.UDPAddr)
}

// errorsSince returns the STUN error responses the client received after
// its first from frames.
func (w *wireTap) errorsSince(from int) []stun.MessageType {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []stun.MessageType
	for _, f := range w.in[from:] {
		if f.channel == 0 && f.typ.Class == stun.ClassErrorResponse {
			out = append(out, f.typ)
		}
	}
	return out
}

// received is how many frames the client has received so far.
func (w *wireTap) received() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.in)
}
