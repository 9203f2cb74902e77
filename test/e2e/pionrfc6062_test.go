package e2e

import (
	"bytes"
	"io"
	"net"
	"testing"
	"time"
)

// tcpDialer is pion's RFC 6062 allocation, as far as connectPeer needs it.
type tcpDialer interface {
	Dial(network, address string) (net.Conn, error)
}

// connectPeer starts a loopback TCP peer and has alloc Connect to it
// (Connect, ConnectionBind): the client's data connection, the peer's end
// and the peer's address, all closed when the test ends.
func connectPeer(t *testing.T, alloc tcpDialer) (out net.Conn, atPeer *net.TCPConn, peer string) {
	t.Helper()
	ln, err := net.ListenTCP("tcp4", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	accepted := make(chan *net.TCPConn, 1)
	go func() {
		if conn, err := ln.AcceptTCP(); err == nil {
			accepted <- conn
		}
	}()
	out, err = alloc.Dial("tcp4", ln.Addr().String())
	if err != nil {
		t.Fatalf("dial the peer through the relay: %v", err)
	}
	t.Cleanup(func() { _ = out.Close() })
	select {
	case atPeer = <-accepted:
	case <-time.After(readDeadline):
		t.Fatal("the peer accepted no connection from the relay")
	}
	t.Cleanup(func() { _ = atPeer.Close() })
	return out, atPeer, ln.Addr().String()
}

// pionTCPAllocation: an RFC 6062 allocation by pion's client, one
// connection it opens to a TCP peer (Connect, ConnectionBind) and one the
// peer opens to the relayed address (ConnectionAttempt, Accept), bytes both
// ways on each, a Refresh, and a release.
func pionTCPAllocation(t *testing.T, srv *turnd) {
	c, tap := dialPion(t, "tcp", srv.TCP, net.IPv4(127, 0, 0, 1))
	alloc, err := c.AllocateTCP()
	if err != nil {
		t.Fatalf("allocate tcp: %v", err)
	}
	relay := alloc.Addr().(*net.TCPAddr)
	out, atPeer, _ := connectPeer(t, alloc)
	// RFC 6062 §5.2: the local end of the server's connection to the peer is the relayed address.
	if from := atPeer.RemoteAddr().String(); from != relay.String() {
		t.Errorf("the peer's connection comes from %v, want the relayed address %v", from, relay)
	}
	relayed := exchange(t, "client-dialled", out, atPeer)

	in, err := net.DialTCP("tcp4", nil, relay)
	if err != nil {
		t.Fatalf("the peer dials the relayed address: %v", err)
	}
	defer in.Close()
	_ = alloc.SetDeadline(time.Now().Add(readDeadline))
	incoming, err := alloc.Accept()
	if err != nil {
		t.Fatalf("accept the peer's connection: %v", err)
	}
	defer incoming.Close()
	relayed += exchange(t, "peer-dialled", incoming, in)

	refresh(t, c, tap, refreshTo)
	if err := alloc.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	rec := usageRecord(t, srv, relay.String())
	if rec["reason"] != "released" || rec["transport"] != "tcp" ||
		rec["to_peer_bytes"] != float64(relayed) || rec["from_peer_bytes"] != float64(relayed) {
		t.Errorf("usage record %v, want released over tcp with %d bytes each way", rec, relayed)
	}
}

// exchange writes a message each way between the client's end of a relayed
// connection and the peer's, checks each arrives byte for byte, and returns
// the length of one (both are as long).
func exchange(t *testing.T, name string, client, peer net.Conn) int {
	t.Helper()
	toPeer := bytes.Repeat([]byte("client to peer, "+name+"; "), 100)
	toClient := bytes.Repeat([]byte("peer to client, "+name+"; "), 100)
	for _, dir := range []struct {
		from, to net.Conn
		msg      []byte
	}{{client, peer, toPeer}, {peer, client, toClient}} {
		if _, err := dir.from.Write(dir.msg); err != nil {
			t.Fatalf("%s: write: %v", name, err)
		}
		_ = dir.to.SetReadDeadline(time.Now().Add(readDeadline))
		got := make([]byte, len(dir.msg))
		if _, err := io.ReadFull(dir.to, got); err != nil || !bytes.Equal(got, dir.msg) {
			t.Fatalf("%s: read %d bytes (%v), want the %d written, byte for byte", name, len(got), err, len(dir.msg))
		}
	}
	return len(toPeer)
}
