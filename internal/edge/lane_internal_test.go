package edge

import (
	"net"
	"net/netip"
	"testing"

	"github.com/pion/stun/v4"

	"github.com/turnd/turnd/internal/bindings"
	"github.com/turnd/turnd/internal/mmsg"
	"github.com/turnd/turnd/internal/netaddr"
)

// TestLanePerPacketDoesNotAllocate: a datagram read from a recvmmsg batch
// and taken by the fast path, and a STUN message handed to the handler,
// cost no allocation (the Client the handler gets is the lane's own).
func TestLanePerPacketDoesNotAllocate(t *testing.T) {
	sock, err := mmsg.ListenUDP("udp4", "127.0.0.1:0", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer sock.Close()
	client, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	batch, err := mmsg.NewReader(sock, readBatch, readBuffer, 0)
	if err != nil {
		t.Fatal(err)
	}
	var handled, taken int
	var keep *bindings.Client
	l := &lane{e: New(nil), sock: sock,
		fast: func(pkt []byte, _ netip.AddrPort) bool { taken++; return pkt[0] == 0x40 },
		h:    func(msg []byte, from *bindings.Client) { handled++; keep = from },
	}
	l.client = bindings.Client{Tuple: netaddr.FiveTuple{Server: netaddr.AddrPort(sock.LocalAddr())}, Lane: sock}
	m, err := stun.Build(stun.TransactionID, stun.BindingRequest)
	if err != nil {
		t.Fatal(err)
	}
	to := sock.LocalAddr().(*net.UDPAddr).AddrPort()
	for name, pkt := range map[string][]byte{
		"ChannelData to the fast path": append([]byte{0x40, 0x00, 0x00, 0xa0}, make([]byte, 160)...),
		"STUN to the handler":          m.Raw,
	} {
		allocs := testing.AllocsPerRun(200, func() {
			if _, err := client.WriteToUDPAddrPort(pkt, to); err != nil {
				t.Fatal(err)
			}
			buf, n, from, err := batch.Next()
			if err != nil {
				t.Fatal(err)
			}
			l.serve(buf[:n], from)
		})
		if allocs != 0 {
			t.Errorf("%s: %.1f allocations per datagram, want 0", name, allocs)
		}
	}
	if handled == 0 || taken == 0 || keep != &l.client {
		t.Fatalf("handled %d, taken %d, client %p: the paths under test never ran", handled, taken, keep)
	}
}

// BenchmarkLanePerPacket is the own plane's work on one datagram of a
// recvmmsg batch past the socket: the fast path taking ChannelData, and a
// STUN message handed to a handler that does nothing.
func BenchmarkLanePerPacket(b *testing.B) {
	sock, err := mmsg.ListenUDP("udp4", "127.0.0.1:0", nil)
	if err != nil {
		b.Fatal(err)
	}
	defer sock.Close()
	l := &lane{e: New(nil), sock: sock,
		fast: func(pkt []byte, _ netip.AddrPort) bool { return pkt[0] == 0x40 },
		h:    func([]byte, *bindings.Client) {},
	}
	l.client = bindings.Client{Tuple: netaddr.FiveTuple{Server: netaddr.AddrPort(sock.LocalAddr())}, Lane: sock}
	m, err := stun.Build(stun.TransactionID, stun.BindingRequest)
	if err != nil {
		b.Fatal(err)
	}
	from := netip.MustParseAddrPort("127.0.0.1:40000")
	for name, pkt := range map[string][]byte{
		"ChannelData": append([]byte{0x40, 0x00, 0x00, 0xa0}, make([]byte, 160)...),
		"STUN":        m.Raw,
	} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				l.serve(pkt, from)
			}
		})
	}
}
