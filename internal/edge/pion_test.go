package edge_test

import (
	"io"
	"net"
	"testing"
	"time"

	"github.com/pion/stun/v4"
	"github.com/pion/turn/v5"

	"github.com/turnd/turnd/internal/edge"
	"github.com/turnd/turnd/internal/gate"
)

// These tests run real pion behind edge.Listener: the RFC 6062 flows depend
// on exactly how pion reads the stream around a ConnectionBind.

// startPion serves TURN over TCP on loopback behind the gate and returns
// the server's address.
func startPion(t *testing.T, p *gate.Policy) net.Addr {
	t.Helper()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen tcp: %v", err)
	}
	g := gate.New(p, gate.Hooks{Accepting: func() bool { return true }})
	srv, err := turn.NewServer(turn.ServerConfig{
		Realm: testRealm,
		AuthHandler: func(ra *turn.RequestAttributes) (string, []byte, bool) {
			return ra.Username, aliceKey(), ra.Username == testUser
		},
		ListenerConfigs: []turn.ListenerConfig{{
			Listener: edge.New(g, nil).Listener(ln, time.Second, nil),
			RelayAddressGenerator: &turn.RelayAddressGeneratorStatic{
				RelayAddress: net.IPv4(127, 0, 0, 1),
				Address:      "127.0.0.1",
			},
		}},
	})
	if err != nil {
		t.Fatalf("start pion: %v", err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	return ln.Addr()
}

// dialPion opens a TURN control connection as a pion client.
func dialPion(t *testing.T, server net.Addr) (*turn.Client, net.Conn) {
	t.Helper()
	conn, err := net.Dial("tcp4", server.String())
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	c, err := turn.NewClient(&turn.ClientConfig{
		STUNServerAddr: server.String(),
		TURNServerAddr: server.String(),
		Conn:           turn.NewSTUNConn(conn),
		Username:       testUser,
		Password:       testPass,
		Realm:          testRealm,
	})
	if err != nil {
		t.Fatalf("new client: %v", err)
	}
	t.Cleanup(c.Close)
	if err := c.Listen(); err != nil {
		t.Fatalf("client listen: %v", err)
	}
	return c, conn
}

// TestPionTCPRelay runs an RFC 6062 TCP relay through the gate: control
// connection, Connect, a data connection bound with ConnectionBind, then
// peer data both ways over the now raw data connection.
func TestPionTCPRelay(t *testing.T) {
	server := startPion(t, &gate.Policy{Keys: staticKeys(), TCPAllocations: true})
	peerLn, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer peerLn.Close()
	peerConn := make(chan net.Conn, 1)
	go func() {
		c, err := peerLn.Accept()
		if err != nil {
			close(peerConn)
			return
		}
		peerConn <- c
	}()

	client, _ := dialPion(t, server)
	alloc, err := client.AllocateTCP()
	if err != nil {
		t.Fatalf("allocate tcp: %v", err)
	}
	defer alloc.Close()
	data, err := alloc.Dial("tcp4", peerLn.Addr().String())
	if err != nil {
		t.Fatalf("dial peer through the relay: %v", err)
	}
	defer data.Close()
	peer, ok := <-peerConn
	if !ok {
		t.Fatal("peer accepted nothing")
	}
	defer peer.Close()
	deadline := time.Now().Add(ioTimeout)
	_ = data.SetDeadline(deadline)
	_ = peer.SetDeadline(deadline)

	// Bytes that are not STUN must flow raw, in both directions.
	up := []byte{0xFF, 0xFE, 0x00, 0x01, 'u', 'p'}
	down := []byte{0x80, 'd', 'o', 'w', 'n'}
	if _, err := data.Write(up); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len(up))
	if _, err := io.ReadFull(peer, got); err != nil || string(got) != string(up) {
		t.Fatalf("peer read %x (%v), want %x", got, err, up)
	}
	if _, err := peer.Write(down); err != nil {
		t.Fatal(err)
	}
	got = make([]byte, len(down))
	if _, err := io.ReadFull(data, got); err != nil || string(got) != string(down) {
		t.Fatalf("client read %x (%v), want %x", got, err, down)
	}
}

// TestPionRefusedBindKeepsGate: a ConnectionBind that pion refuses leaves
// the connection a TURN control connection, so the gate must go on
// inspecting it — else any client could switch the gate off with a bogus
// bind and then allocate the TCP relays the operator disabled.
func TestPionRefusedBindKeepsGate(t *testing.T) {
	server := startPion(t, &gate.Policy{Keys: staticKeys(), TCPAllocations: false})
	client, conn := dialPion(t, server)

	bogus := request(t, methodConnectionBind, testUser, nil, true,
		stun.RawAttribute{Type: stun.AttrConnectionID, Value: []byte{0, 0, 0, 1}})
	if _, err := conn.Write(bogus); err != nil {
		t.Fatal(err)
	}
	alloc, err := client.AllocateTCP()
	if err == nil {
		_ = alloc.Close()
		t.Fatal("TCP allocation succeeded with TCPAllocations off")
	}
	t.Logf("allocate tcp refused: %v", err)
}
