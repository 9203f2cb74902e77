package relay

import (
	"bytes"
	"encoding/binary"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/pion/stun/v4"

	"github.com/turnd/turnd/internal/bindings"
)

// sendTo is a Send indication to peer carrying data.
func sendTo(t testing.TB, peer netip.AddrPort, data []byte) []byte {
	t.Helper()
	m, err := stun.Build(stun.TransactionID, stun.NewType(stun.MethodSend, stun.ClassIndication),
		xorPeer{net.UDPAddrFromAddrPort(peer)},
		stun.RawAttribute{Type: stun.AttrData, Length: uint16(len(data)), Value: data}, stun.Fingerprint)
	if err != nil {
		t.Fatal(err)
	}
	return m.Raw
}

// TestRouteChannelDataRoundTrip: a route opened with Open relays
// ChannelData both ways on loopback by what the route says:
// up to the channel's peer, and the peer's answer back as ChannelData on
// its number; a peer with a permission only gets a Data indication.
func TestRouteChannelDataRoundTrip(t *testing.T) {
	r := newOpenRig(t, dualOptions())
	got := r.open(t, bindings.Want{Families: bindings.V4})
	if r.up(channelData(0x4000, []byte("early")), r.clientAP()) {
		t.Fatal("relayed on a channel the route does not have")
	}
	r.bind()
	if !r.up(channelData(0x4000, []byte("ping")), r.clientAP()) {
		t.Fatal("ChannelData on the route's channel not relayed")
	}
	b, from := read(t, r.peer4)
	if string(b) != "ping" || from != got.Addr[0] {
		t.Fatalf("peer got %q from %v, want \"ping\" from %v", b, from, got.Addr[0])
	}
	if _, err := r.peer4.WriteToUDPAddrPort([]byte("pong"), got.Addr[0]); err != nil {
		t.Fatal(err)
	}
	b, _ = read(t, r.client)
	if !bytes.Equal(b, channelData(0x4000, []byte("pong"))) {
		t.Fatalf("client got % x, want ChannelData 0x4000 \"pong\"", b)
	}

	r.route.SetChannels(nil) // the channel expired; the permission stays
	if r.up(channelData(0x4000, []byte("late")), r.clientAP()) {
		t.Fatal("relayed on an expired channel")
	}
	if _, err := r.peer4.WriteToUDPAddrPort([]byte("data"), got.Addr[0]); err != nil {
		t.Fatal(err)
	}
	b, _ = read(t, r.client)
	var m stun.Message
	m.Raw = b
	if err := m.Decode(); err != nil || m.Type != stun.NewType(stun.MethodData, stun.ClassIndication) {
		t.Fatalf("client got % x (%v), want a Data indication", b, err)
	}
	if d, err := m.Get(stun.AttrData); err != nil || string(d) != "data" {
		t.Fatalf("Data indication carries %q (%v)", d, err)
	}
	if u := r.route.Usage.Usage(); u.ToPeerPackets != 1 || u.FromPeerPackets != 2 {
		t.Fatalf("route usage %+v, want 1 datagram up and 2 down", u)
	}
}

// TestUplinkPicksThePeersFamily: a dual-stack route sends to an IPv4 peer
// from its IPv4 relay and to an IPv6 peer from its IPv6 relay, for
// ChannelData and Send indications alike, and answers come back from each.
func TestUplinkPicksThePeersFamily(t *testing.T) {
	r := newOpenRig(t, dualOptions())
	got := r.open(t, bindings.Want{Families: bindings.Both})
	r.bind()
	for i, c := range []struct {
		number uint16
		peer   *net.UDPConn
	}{{0x4000, r.peer4}, {0x4001, r.peer6}} {
		if !r.up(channelData(c.number, []byte("cd")), r.clientAP()) {
			t.Fatalf("channel %#x not relayed", c.number)
		}
		if b, from := read(t, c.peer); string(b) != "cd" || from != got.Addr[i] {
			t.Fatalf("channel %#x: peer got %q from %v, want from %v", c.number, b, from, got.Addr[i])
		}
		if !r.up(sendTo(t, udpAP(c.peer), []byte("si")), r.clientAP()) {
			t.Fatalf("Send to %v not relayed", udpAP(c.peer))
		}
		if b, from := read(t, c.peer); string(b) != "si" || from != got.Addr[i] {
			t.Fatalf("Send: peer got %q from %v, want from %v", b, from, got.Addr[i])
		}
		if _, err := c.peer.WriteToUDPAddrPort([]byte("back"), got.Addr[i]); err != nil {
			t.Fatal(err)
		}
		if b, _ := read(t, r.client); !bytes.Equal(b, channelData(c.number, []byte("back"))) {
			t.Fatalf("client got % x, want ChannelData %#x \"back\"", b, c.number)
		}
	}
}

// TestCloseOneFamily: closing one family of a dual-stack route stops its
// relay at once and leaves the other relaying; closing the rest forgets
// the route.
func TestCloseOneFamily(t *testing.T) {
	r := newOpenRig(t, dualOptions())
	got := r.open(t, bindings.Want{Families: bindings.Both})
	r.bind()
	r.routes.Close(r.route, bindings.V6)
	if r.up(channelData(0x4001, []byte("x")), r.clientAP()) {
		t.Fatal("relayed to an IPv6 peer after the IPv6 relay closed")
	}
	if r.rl.liveCount() != 1 {
		t.Fatalf("%d live sockets after closing IPv6, want 1", r.rl.liveCount())
	}
	if !r.up(channelData(0x4000, []byte("v4")), r.clientAP()) {
		t.Fatal("the IPv4 relay stopped with the IPv6 one")
	}
	if b, from := read(t, r.peer4); string(b) != "v4" || from != got.Addr[0] {
		t.Fatalf("peer got %q from %v", b, from)
	}
	r.routes.Close(r.route, bindings.V4)
	if r.up(channelData(0x4000, []byte("x")), r.clientAP()) {
		t.Fatal("relayed after the route closed")
	}
	r.rl.mu.Lock()
	left := len(r.rl.routes) + len(r.rl.live)
	r.rl.mu.Unlock()
	if _, indexed := r.rl.byClient.get(clientKey{client: r.clientAP(), server: r.rl.serverOf(r.lane.LocalAddr())}); indexed || left != 0 {
		t.Fatalf("after closing both: indexed %v, %d routes or sockets left", indexed, left)
	}
}

// udpRelayed is the rig's own route's IPv4 relayed address.
func (r *openRig) udpRelayed(t testing.TB) netip.AddrPort {
	t.Helper()
	r.rl.mu.Lock()
	defer r.rl.mu.Unlock()
	c := r.rl.routes[r.route].socks[0]
	return netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), uint16(c.key.port))
}

// TestRoutePerPacketPathsDoNotAllocate guards the route-driven hot paths:
// ChannelData and Send up to a peer of either family of a dual-stack route,
// and the downlink back, cost no heap allocation.
func TestRoutePerPacketPathsDoNotAllocate(t *testing.T) {
	r := newOpenRig(t, dualOptions())
	got := r.open(t, bindings.Want{Families: bindings.Both})
	r.bind()
	client := r.clientAP()
	up6 := channelData(0x4001, make([]byte, 160))
	send6 := sendTo(t, udpAP(r.peer6), make([]byte, 160))
	if a := testing.AllocsPerRun(200, func() {
		if !r.up(up6, client) || !r.up(send6, client) {
			t.Fatal("not relayed")
		}
	}); a != 0 {
		t.Errorf("uplink: %v allocations per packet", a)
	}
	// The loop's allocations count too: AllocsPerRun counts every goroutine's.
	const batch = 50
	payload := make([]byte, 160)
	buf := make([]byte, 1600)
	_ = r.client.SetReadDeadline(time.Now().Add(10 * time.Second))
	allocs := testing.AllocsPerRun(10, func() {
		for i := 0; i < batch; i++ {
			if _, err := r.peer6.WriteToUDPAddrPort(payload, got.Addr[1]); err != nil {
				t.Fatal(err)
			}
			if n, err := r.client.Read(buf); err != nil || n != 4+len(payload) || binary.BigEndian.Uint16(buf) != 0x4001 {
				t.Fatalf("client read %d bytes (%v)", n, err)
			}
		}
	})
	if perPacket := allocs / batch; perPacket >= 0.1 {
		t.Errorf("downlink: %.2f allocations per packet", perPacket)
	}
}

// TestRevokeLeavesOpenedRoutesToTheTable: a reload's Revoke never rewrites
// a route's sets, whose only writer is the allocation table.
func TestRevokeLeavesOpenedRoutesToTheTable(t *testing.T) {
	r := newOpenRig(t, dualOptions())
	r.open(t, bindings.Want{Families: bindings.Both})
	r.bind()
	r.rl.Revoke(func(netip.Addr) bool { return true })
	if len(r.route.Permissions()) != 2 || len(r.route.Channels()) != 2 {
		t.Fatalf("the route's sets changed: %v, %v", r.route.Permissions(), r.route.Channels())
	}
}

// BenchmarkUplinkRouteChannelData is BenchmarkUplinkChannelData on an
// opened dual-stack route, to its IPv6 peer.
func BenchmarkUplinkRouteChannelData(b *testing.B) {
	r := newOpenRig(b, dualOptions())
	r.open(b, bindings.Want{Families: bindings.Both})
	r.bind()
	benchUplink(b, r.up, r.clientAP())
}

// BenchmarkDownlinkRouteChannelData is BenchmarkDownlinkChannelData on an
// opened dual-stack route, from its IPv6 peer.
func BenchmarkDownlinkRouteChannelData(b *testing.B) {
	r := newOpenRig(b, dualOptions())
	got := r.open(b, bindings.Want{Families: bindings.Both})
	r.bind()
	benchDownlink(b, r.peer6, got.Addr[1], r.client)
}

// TestDualStackRouteSharesItsRate: limits.max_bps holds an allocation, not
// each of its relay sockets: set through either relayed address, it is
// one budget for the IPv4 and the IPv6 relay together.
func TestDualStackRouteSharesItsRate(t *testing.T) {
	r := newOpenRig(t, dualOptions())
	r.rl.clock = func() time.Duration { return time.Hour } // stopped: nothing refills
	got := r.open(t, bindings.Want{Families: bindings.Both})
	r.bind()
	// 10 kB/s: the 100 ms burst passes 1000 bytes, two datagrams of 400
	// bytes and their headers, and a third that starts inside it.
	if err := r.rl.SetRate(net.UDPAddrFromAddrPort(got.Addr[1]), 80_000); err != nil {
		t.Fatal(err)
	}
	payload := make([]byte, 400)
	for i := 0; i < 4; i++ {
		r.up(channelData(0x4000, payload), r.clientAP())
		r.up(channelData(0x4001, payload), r.clientAP())
	}
	if u := r.route.Usage.Usage(); u.ToPeerPackets != 3 || u.RateLimited != 5 {
		t.Fatalf("usage %+v: want 3 datagrams relayed and 5 held back by the one rate", u)
	}
}
