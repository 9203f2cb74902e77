package relay

import (
	"encoding/binary"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/pion/stun/v4"

	"github.com/turnd/turnd/internal/mmsg"
	"github.com/turnd/turnd/internal/traffic"
)

// fastPathRig is one UDP allocation wired as the server wires it: a lane
// (the client-facing socket), a route opened for a client, and a channel
// bound to a peer. All sockets are real, on loopback.
type fastPathRig struct {
	gen    *Relay
	up     func(pkt []byte, client netip.AddrPort) bool // the lane's fast path
	relay  *Conn
	lane   *mmsg.Socket // turnd's client-facing socket
	client *net.UDPConn // the TURN client
	peer   *net.UDPConn // the peer the channel points at
}

func newFastPathRig(t testing.TB) *fastPathRig {
	t.Helper()
	return newFastPathRigOn(t, "udp4", net.IPv4(127, 0, 0, 1))
}

// newFastPathRigOn is newFastPathRig on network ("udp4", "udp6") and ip.
func newFastPathRigOn(t testing.TB, network string, ip net.IP) *fastPathRig {
	t.Helper()
	listen := func() *net.UDPConn {
		c, err := net.ListenUDP(network, &net.UDPAddr{IP: ip})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	lane, err := mmsg.Adopt(listen())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lane.Close() })
	r := &fastPathRig{lane: lane, client: listen(), peer: listen()}
	lo, hi := 20000, 40000
	r.gen = New(Options{IPv4: net.IPv4(127, 0, 0, 1), IPv6: net.IPv6loopback, MinPort: lo, MaxPort: hi})
	t.Cleanup(r.gen.Close)
	var relayAddr net.Addr
	r.relay, relayAddr = r.gen.openUDPAt(t, network, r.lane, r.client.LocalAddr(), r.lane.LocalAddr(), nil)
	r.up = r.gen.RelayFor(r.lane)
	if err := r.gen.bindAt(relayAddr, r.peer.LocalAddr(), 0x4001, false); err != nil {
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
	if !r.up(channelData(0x4001, []byte("up")), clientAP) {
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
		if r.up(pkt, clientAP) {
			t.Errorf("%s: relayed", name)
		}
	}
	other := clientAP
	other = netipAddrPortWithPort(other, other.Port()+1)
	if r.up(channelData(0x4001, []byte("x")), other) {
		t.Error("another client's packet took this client's channel")
	}

	// Unbinding (the table's expiry or deletion) stops the fast path at once.
	if err := r.gen.bindAt(relayAddrOf(r), r.peer.LocalAddr(), 0x4001, true); err != nil {
		t.Fatal(err)
	}
	if r.up(channelData(0x4001, []byte("late")), clientAP) {
		t.Fatal("relayed on an unbound channel")
	}
}

func TestDownlinkChannelDataDataIndicationOrDrop(t *testing.T) {
	r := newFastPathRig(t)
	// Permissions are per IP address (RFC 8656 §9), so the two differ in IP.
	listen := func(last byte) *net.UDPConn {
		c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, last)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	permitted, stranger := listen(2), listen(3)
	relayAddr := r.relay.LocalAddr()
	if err := r.gen.permitAt(relayAddr, permitted.LocalAddr().(*net.UDPAddr).IP, false); err != nil {
		t.Fatal(err)
	}
	send := func(from *net.UDPConn, data string) {
		if _, err := from.WriteTo([]byte(data), relayAddr); err != nil {
			t.Fatal(err)
		}
	}
	send(stranger, "dropped") // no channel, no permission: discarded (RFC 8656 §11.3)
	send(r.peer, "down")      // bound channel: ChannelData
	send(permitted, "hello")  // permission only: Data indication

	buf := make([]byte, 1600)
	_ = r.client.SetReadDeadline(time.Now().Add(2 * time.Second))
	n, err := r.client.Read(buf)
	if err != nil {
		t.Fatal(err)
	}
	if want := channelData(0x4001, []byte("down")); string(buf[:n]) != string(want) {
		t.Fatalf("client got % x, want ChannelData % x", buf[:n], want)
	}
	n, err = r.client.Read(buf)
	if err != nil {
		t.Fatal(err)
	}
	msg := &stun.Message{Raw: append([]byte(nil), buf[:n]...)}
	if err := msg.Decode(); err != nil || msg.Type != stun.NewType(stun.MethodData, stun.ClassIndication) {
		t.Fatalf("client got % x (%v), want a Data indication", buf[:n], err)
	}
	var peer stun.XORMappedAddress
	data, _ := msg.Get(stun.AttrData)
	if peer.GetFromAs(msg, stun.AttrXORPeerAddress) != nil || string(data) != "hello" ||
		peer.Port != permitted.LocalAddr().(*net.UDPAddr).Port || !peer.IP.Equal(net.IPv4(127, 0, 0, 2)) {
		t.Fatalf("Data indication: peer %v data %q", peer, data)
	}
	if n%4 != 0 {
		t.Fatalf("Data indication of %d bytes is not padded", n)
	}
	_ = r.client.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	if n, err := r.client.Read(buf); err == nil {
		t.Fatalf("the stranger's datagram reached the client: % x", buf[:n])
	}
}

func TestUplinkSendIndicationNeedsPermission(t *testing.T) {
	r := newFastPathRig(t)
	clientAP := r.client.LocalAddr().(*net.UDPAddr).AddrPort()
	peerUDP := r.peer.LocalAddr().(*net.UDPAddr)
	send, err := stun.Build(stun.TransactionID, stun.NewType(stun.MethodSend, stun.ClassIndication),
		xorPeer{peerUDP}, stun.RawAttribute{Type: stun.AttrData, Length: 5, Value: []byte("hello")}, stun.Fingerprint)
	if err != nil {
		t.Fatal(err)
	}
	if r.up(send.Raw, clientAP) {
		t.Fatal("Send indication relayed without a permission")
	}
	if err := r.gen.permitAt(r.relay.LocalAddr(), peerUDP.IP, false); err != nil {
		t.Fatal(err)
	}
	if !r.up(send.Raw, clientAP) {
		t.Fatal("permitted Send indication not relayed")
	}
	buf := make([]byte, 64)
	_ = r.peer.SetReadDeadline(time.Now().Add(2 * time.Second))
	if n, _, err := r.peer.ReadFromUDP(buf); err != nil || string(buf[:n]) != "hello" {
		t.Fatalf("peer got %q (%v)", buf[:n], err)
	}
	if a := testing.AllocsPerRun(100, func() { r.up(send.Raw, clientAP) }); a != 0 {
		t.Errorf("Send indication fast path: %v allocations per packet", a)
	}
	if err := r.gen.permitAt(r.relay.LocalAddr(), peerUDP.IP, true); err != nil {
		t.Fatal(err)
	}
	if r.up(send.Raw, clientAP) {
		t.Fatal("relayed after the permission was revoked")
	}
}

type xorPeer struct{ a *net.UDPAddr }

func (x xorPeer) AddTo(m *stun.Message) error {
	return (&stun.XORMappedAddress{IP: x.a.IP, Port: x.a.Port}).AddToAs(m, stun.AttrXORPeerAddress)
}

// TestFastPathDoesNotAllocate is the guard of the hot path: relaying in
// either direction must not touch the heap.
func TestFastPathDoesNotAllocate(t *testing.T) {
	r := newFastPathRig(t)
	clientAP := r.client.LocalAddr().(*net.UDPAddr).AddrPort()
	pkt := channelData(0x4001, make([]byte, 160))
	if a := testing.AllocsPerRun(200, func() { r.up(pkt, clientAP) }); a != 0 {
		t.Errorf("uplink: %v allocations per packet", a)
	}

	// Downlink: the loop relays what the peer sends; the client reads it.
	// AllocsPerRun counts every goroutine's allocations, the loop's too.
	const batch = 50
	buf := make([]byte, 1600)
	payload := make([]byte, 160)
	relayAP := r.relay.LocalAddr().(*net.UDPAddr).AddrPort()
	_ = r.client.SetReadDeadline(time.Now().Add(10 * time.Second))
	allocs := testing.AllocsPerRun(10, func() {
		for i := 0; i < batch; i++ {
			if _, err := r.peer.WriteToUDPAddrPort(payload, relayAP); err != nil {
				t.Fatal(err)
			}
			if n, err := r.client.Read(buf); err != nil || n != 4+len(payload) {
				t.Fatalf("client read %d bytes: %v", n, err)
			}
		}
	})
	if perPacket := allocs / batch; perPacket >= 0.1 {
		t.Errorf("downlink: %.2f allocations per packet", perPacket)
	}
}

func BenchmarkUplinkChannelData(b *testing.B) {
	r := newFastPathRig(b)
	benchUplink(b, r.up, r.client.LocalAddr().(*net.UDPAddr).AddrPort())
}

// BenchmarkUplinkSendIndication is the Send indication fast path: parse,
// client lookup, permission check, send.
func BenchmarkUplinkSendIndication(b *testing.B) {
	r := newFastPathRig(b)
	clientAP := r.client.LocalAddr().(*net.UDPAddr).AddrPort()
	peerUDP := r.peer.LocalAddr().(*net.UDPAddr)
	if err := r.gen.permitAt(r.relay.LocalAddr(), peerUDP.IP, false); err != nil {
		b.Fatal(err)
	}
	send, err := stun.Build(stun.TransactionID, stun.NewType(stun.MethodSend, stun.ClassIndication),
		xorPeer{peerUDP}, stun.RawAttribute{Type: stun.AttrData, Length: 160, Value: make([]byte, 160)}, stun.Fingerprint)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.SetBytes(160)
	for b.Loop() {
		if !r.up(send.Raw, clientAP) {
			b.Fatal("Send indication not relayed")
		}
	}
}

func relayAddrOf(r *fastPathRig) net.Addr { return r.relay.LocalAddr() }

func netipAddrPortWithPort(a netip.AddrPort, port uint16) netip.AddrPort {
	return netip.AddrPortFrom(a.Addr(), port)
}

// TestSendToForbiddenPeerIsDropped: Send indications to turnd's own sockets
// or to port 0 are taken and dropped, even with a permission, and counted
// as dropped for a forbidden peer, never as relayed.
func TestSendToForbiddenPeerIsDropped(t *testing.T) {
	r := newFastPathRig(t)
	peerUDP := r.peer.LocalAddr().(*net.UDPAddr)
	r.gen.opts.Forbidden = func(a netip.AddrPort) bool { return a == peerUDP.AddrPort() }
	if err := r.gen.permitAt(r.relay.LocalAddr(), peerUDP.IP, false); err != nil {
		t.Fatal(err)
	}
	clientAP := r.client.LocalAddr().(*net.UDPAddr).AddrPort()
	for _, to := range []*net.UDPAddr{peerUDP, {IP: peerUDP.IP, Port: 0}} {
		send, err := stun.Build(stun.TransactionID, stun.NewType(stun.MethodSend, stun.ClassIndication),
			xorPeer{to}, stun.RawAttribute{Type: stun.AttrData, Length: 1, Value: []byte("x")})
		if err != nil {
			t.Fatal(err)
		}
		if !r.up(send.Raw, clientAP) {
			t.Fatalf("Send to %v was left to the handlers", to)
		}
	}
	_ = r.peer.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
	if n, err := r.peer.Read(make([]byte, 16)); err == nil {
		t.Fatalf("forbidden peer received %d bytes", n)
	}
	r.relay.route.Usage.Flush(r.gen.Counters())
	c := r.gen.Counters()
	if d := &c.DroppedToPeer[traffic.ForbiddenPeer]; d.Packets.Load() != 2 || d.Bytes.Load() != 2 || c.ToPeerPackets.Load() != 0 {
		t.Fatalf("dropped for a forbidden peer %d (%d bytes), relayed %d; want 2 (2 bytes) and 0",
			d.Packets.Load(), d.Bytes.Load(), c.ToPeerPackets.Load())
	}
}

// TestUplinkCountsDroppedDatagrams: a datagram the kernel refuses on the
// uplink is counted as dropped, not as relayed.
func TestUplinkCountsDroppedDatagrams(t *testing.T) {
	r := newFastPathRig(t)
	portZero := &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 0}
	if err := r.gen.bindAt(relayAddrOf(r), portZero, 0x4002, false); err != nil {
		t.Fatal(err)
	}
	clientAP := r.client.LocalAddr().(*net.UDPAddr).AddrPort()
	if !r.up(channelData(0x4002, []byte("x")), clientAP) {
		t.Fatal("bound channel not taken")
	}
	r.relay.route.Usage.Flush(r.gen.Counters())
	c := r.gen.Counters()
	if d := &c.DroppedToPeer[traffic.SendError]; d.Packets.Load() != 1 || d.Bytes.Load() != 1 || c.ToPeerPackets.Load() != 0 {
		t.Fatalf("dropped %d (%d bytes), relayed %d; want 1 (1 byte) and 0", d.Packets.Load(), d.Bytes.Load(), c.ToPeerPackets.Load())
	}
}
