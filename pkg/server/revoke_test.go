package server_test

import (
	"bytes"
	"errors"
	"net"
	"os"
	"testing"
	"time"

	"github.com/pion/stun/v4"

	"github.com/turnd/turnd/internal/testturn"
)

// rawPeer is a UDP peer the test reads and writes itself.
type rawPeer struct {
	*net.UDPConn
}

func listenPeer(t *testing.T, ip string) rawPeer {
	t.Helper()
	c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.ParseIP(ip)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return rawPeer{c}
}

func (p rawPeer) addr() *net.UDPAddr { return p.LocalAddr().(*net.UDPAddr) }

// next returns the next datagram, or nil after timeout.
func (p rawPeer) next(timeout time.Duration) []byte {
	buf := make([]byte, 2048)
	_ = p.SetReadDeadline(time.Now().Add(timeout))
	n, err := p.Read(buf)
	if err != nil {
		return nil
	}
	return buf[:n]
}

// pending returns whatever already waits on the socket, without waiting.
func (p rawPeer) pending() [][]byte {
	var out [][]byte
	for {
		b := p.next(time.Millisecond)
		if b == nil {
			return out
		}
		out = append(out, b)
	}
}

// frameFrom waits for a frame carrying data from the server, returning
// every frame read before it.
func frameFrom(t *testing.T, c *testturn.Client, data []byte) (before [][]byte) {
	t.Helper()
	for range 50 {
		f, err := c.ReadFrame(5 * time.Second)
		if err != nil {
			t.Fatalf("waiting for %q: %v", data, err)
		}
		if bytes.Contains(f, data) {
			return before
		}
		before = append(before, f)
	}
	t.Fatalf("%q never came", data)
	return nil
}

// TestReloadDenyingAPeerStopsLiveRelaying: a live allocation with a
// permission and a channel to a peer stops relaying to and from it, by
// ChannelData and by Send indication, as soon as a reload denies the peer;
// another peer of the same allocation goes on.
func TestReloadDenyingAPeerStopsLiveRelaying(t *testing.T) {
	s := start(t, testOptions())
	denied := listenPeer(t, "127.0.0.1")
	kept := listenPeer(t, "127.0.0.2")
	c := dial(t, s, "udp")
	relayed := c.MustAllocate()
	mustPermit(t, c, kept.addr())
	if code := testturn.ErrorCode(c.ChannelBind(0x4001, denied.addr())); code != 0 {
		t.Fatalf("ChannelBind: %d", code)
	}
	c.SendChannel(0x4001, []byte("before"))
	if got := denied.next(5 * time.Second); string(got) != "before" {
		t.Fatalf("before the reload the peer got %q", got)
	}

	next := s.Config()
	next.Peers.Denied = []string{"127.0.0.1"}
	if _, err := s.Reload(next); err != nil {
		t.Fatal(err)
	}

	// Uplink: ChannelData and a Send indication to the denied peer, then a
	// marker to the kept one from the same relay socket, sent after them.
	c.SendChannel(0x4001, []byte("channel after"))
	c.Send(denied.addr(), []byte("send after"))
	c.Send(kept.addr(), []byte("marker"))
	if got := kept.next(5 * time.Second); string(got) != "marker" {
		t.Fatalf("the kept peer got %q, want the marker", got)
	}
	if got := denied.pending(); len(got) > 0 {
		t.Fatalf("the denied peer still got %q after the reload", got)
	}

	// Downlink: the denied peer sends first, then the kept one.
	if _, err := denied.WriteTo([]byte("from denied"), relayed); err != nil {
		t.Fatal(err)
	}
	if _, err := kept.WriteTo([]byte("from kept"), relayed); err != nil {
		t.Fatal(err)
	}
	if before := frameFrom(t, c, []byte("from kept")); len(before) > 0 {
		t.Fatalf("the client still got %d frames from the denied peer: %q", len(before), before)
	}
}

// TestReloadDenyingAPeerReachesTCPRelays: an RFC 6062 allocation's data
// connection to a peer a reload denies is closed, and a new connection
// from that peer is closed before the client is offered it
// (ConnectionAttempt); another permitted peer is still offered.
func TestReloadDenyingAPeerReachesTCPRelays(t *testing.T) {
	s := start(t, testOptions())
	peer, accepted := acceptingPeer(t)
	c := dial(t, s, "tcp")
	resp := c.AllocateTCP()
	wantCode(t, c, resp, 0, "tcp allocation")
	relayAddr := testturn.Relayed(t, resp)
	for _, ip := range []net.IP{net.IPv4(127, 0, 0, 1), net.IPv4(127, 0, 0, 2)} {
		if code := c.Permit(&net.UDPAddr{IP: ip}); code != 0 {
			t.Fatalf("permission to %v: %d", ip, code)
		}
	}
	id := connectID(t, c, peer)
	select {
	case <-accepted:
	case <-time.After(waitTimeout):
		t.Fatal("peer saw no connection")
	}
	data := dial(t, s, "tcp")
	wantCode(t, data, data.Request(stun.MethodConnectionBind, testturn.RawAttr(stun.AttrConnectionID, id)), 0, "ConnectionBind")

	next := s.Config()
	next.Peers.Denied = []string{"127.0.0.1"}
	if _, err := s.Reload(next); err != nil {
		t.Fatal(err)
	}
	if !data.WaitClosed(5 * time.Second) {
		t.Fatal("data connection to the denied peer still open 5 s after the reload")
	}

	relay := &net.TCPAddr{IP: relayAddr.IP, Port: relayAddr.Port}
	from := func(ip net.IP) net.Conn {
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: ip}}
		pc, err := d.Dial("tcp4", relay.String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { pc.Close() })
		return pc
	}
	denied := from(net.IPv4(127, 0, 0, 1))
	_ = denied.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := denied.Read(make([]byte, 1)); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("new connection from the denied peer: read %v, want it closed", err)
	}
	from(net.IPv4(127, 0, 0, 2))
	var offered stun.XORMappedAddress
	if err := offered.GetFromAs(c.Indication(stun.MethodConnectionAttempt, waitTimeout), stun.AttrXORPeerAddress); err != nil {
		t.Fatalf("ConnectionAttempt without XOR-PEER-ADDRESS: %v", err)
	}
	if !offered.IP.Equal(net.IPv4(127, 0, 0, 2)) {
		t.Fatalf("client offered a connection from %v, want 127.0.0.2", offered.IP)
	}
}
