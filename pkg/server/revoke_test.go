package server_test

import (
	"bytes"
	"net"
	"testing"
	"time"

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
