package relay

import (
	"encoding/binary"
	"errors"
	"net"
	"net/netip"
	"os"
	"testing"
	"time"

	"github.com/pion/turn/v5"
)

// fastPathRig is one UDP allocation wired as the server wires it: a lane
// (the client-facing socket), a relay socket attached to a client, and a
// channel bound to a peer. All sockets are real, on loopback.
type fastPathRig struct {
	gen    *Generator
	relay  *Conn
	lane   *net.UDPConn // turnd's client-facing socket
	client *net.UDPConn // the TURN client
	peer   *net.UDPConn // the peer the channel points at
}

func newFastPathRig(t testing.TB) *fastPathRig {
	t.Helper()
	listen := func() *net.UDPConn {
		c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	r := &fastPathRig{lane: listen(), client: listen(), peer: listen()}
	lo, hi := 20000, 40000
	r.gen = New(Options{IPv4: net.IPv4(127, 0, 0, 1), MinPort: lo, MaxPort: hi})
	pc, relayAddr, err := r.gen.AllocatePacketConnFor(turn.AllocateListenerConfig{Network: "udp4"}, r.lane)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	r.relay = pc.(*Conn)
	if err := r.gen.AttachClient(relayAddr, r.client.LocalAddr()); err != nil {
		t.Fatal(err)
	}
	if err := r.gen.BindChannel(relayAddr, r.peer.LocalAddr(), 0x4001, false); err != nil {
		t.Fatal(err)
	}
	return r
}

func channelData(number uint16, payload []byte) []byte {
	b := make([]byte, 4+len(payload))
	binary.BigEndian.PutUint16(b[0:], number)
	binary.BigEndian.PutUint16(b[2:], uint16(len(payload)))
	copy(b[4:], payload)
	return b
}

func TestUplinkRelaysBoundChannelsOnly(t *testing.T) {
	r := newFastPathRig(t)
	clientAP := r.client.LocalAddr().(*net.UDPAddr).AddrPort()
	if !r.gen.RelayChannelData(channelData(0x4001, []byte("up")), clientAP) {
		t.Fatal("bound channel not relayed")
	}
	buf := make([]byte, 64)
	_ = r.peer.SetReadDeadline(time.Now().Add(2 * time.Second))
	n, from, err := r.peer.ReadFromUDP(buf)
	if err != nil || string(buf[:n]) != "up" || from.Port != r.relay.LocalAddr().(*net.UDPAddr).Port {
		t.Fatalf("peer got %q from %v (%v)", buf[:n], from, err)
	}
	for name, pkt := range map[string][]byte{
		"unbound number": channelData(0x4002, []byte("x")),
		"truncated":      channelData(0x4001, []byte("abc"))[:5],
		"short":          {0x40, 0x01},
	} {
		if r.gen.RelayChannelData(pkt, clientAP) {
			t.Errorf("%s: relayed", name)
		}
	}
	other := clientAP
	other = netipAddrPortWithPort(other, other.Port()+1)
	if r.gen.RelayChannelData(channelData(0x4001, []byte("x")), other) {
		t.Error("another client's packet took this client's channel")
	}

	// Unbinding (pion's expiry or deletion event) stops the fast path at once.
	if err := r.gen.BindChannel(relayAddrOf(r), r.peer.LocalAddr(), 0x4001, true); err != nil {
		t.Fatal(err)
	}
	if r.gen.RelayChannelData(channelData(0x4001, []byte("late")), clientAP) {
		t.Fatal("relayed on an unbound channel")
	}
}

func TestDownlinkWrapsBoundPeersAndHandsTheRestToPion(t *testing.T) {
	r := newFastPathRig(t)
	stranger, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer stranger.Close()
	relayAddr := r.relay.LocalAddr()
	if _, err := r.peer.WriteTo([]byte("down"), relayAddr); err != nil {
		t.Fatal(err)
	}
	if _, err := stranger.WriteTo([]byte("other"), relayAddr); err != nil {
		t.Fatal(err)
	}
	// pion's read: the bound peer's datagram never reaches it; the stranger's does.
	buf := make([]byte, 1600)
	_ = r.relay.SetReadDeadline(time.Now().Add(2 * time.Second))
	n, from, err := r.relay.ReadFrom(buf)
	if err != nil || string(buf[:n]) != "other" || from.(*net.UDPAddr).Port != stranger.LocalAddr().(*net.UDPAddr).Port {
		t.Fatalf("pion got %q from %v (%v)", buf[:n], from, err)
	}
	_ = r.client.SetReadDeadline(time.Now().Add(2 * time.Second))
	n, err = r.client.Read(buf)
	if err != nil {
		t.Fatal(err)
	}
	if want := channelData(0x4001, []byte("down")); string(buf[:n]) != string(want) {
		t.Fatalf("client got % x, want ChannelData % x", buf[:n], want)
	}
}

// TestFastPathDoesNotAllocate is the guard of the hot path: relaying in
// either direction must not touch the heap.
func TestFastPathDoesNotAllocate(t *testing.T) {
	r := newFastPathRig(t)
	clientAP := r.client.LocalAddr().(*net.UDPAddr).AddrPort()
	pkt := channelData(0x4001, make([]byte, 160))
	if a := testing.AllocsPerRun(200, func() { r.gen.RelayChannelData(pkt, clientAP) }); a != 0 {
		t.Errorf("uplink: %v allocations per packet", a)
	}

	const batch = 100
	buf := make([]byte, 1600)
	payload := make([]byte, 160)
	allocs := testing.AllocsPerRun(5, func() {
		for i := 0; i < batch; i++ {
			_, _ = r.peer.WriteTo(payload, r.relay.LocalAddr())
		}
		// The downlink loop relays all of them, then the deadline ends it
		// (the timeout error itself allocates a few objects, once).
		_ = r.relay.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
		if _, _, err := r.relay.ReadFrom(buf); !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("downlink returned %v", err)
		}
	})
	// WriteTo on the peer side allocates its sockaddr; measure it alone.
	peerAllocs := testing.AllocsPerRun(5, func() {
		for i := 0; i < batch; i++ {
			_, _ = r.peer.WriteTo(payload, r.relay.LocalAddr())
		}
	})
	if perPacket := (allocs - peerAllocs) / batch; perPacket >= 0.1 {
		t.Errorf("downlink: %.2f allocations per packet", perPacket)
	}
}

func BenchmarkUplinkChannelData(b *testing.B) {
	r := newFastPathRig(b)
	clientAP := r.client.LocalAddr().(*net.UDPAddr).AddrPort()
	pkt := channelData(0x4001, make([]byte, 160))
	b.ReportAllocs()
	b.SetBytes(160)
	for b.Loop() {
		r.gen.RelayChannelData(pkt, clientAP)
	}
}

func relayAddrOf(r *fastPathRig) net.Addr { return r.relay.LocalAddr() }

func netipAddrPortWithPort(a netip.AddrPort, port uint16) netip.AddrPort {
	return netip.AddrPortFrom(a.Addr(), port)
}
