package edge

import (
	"net"
	"net/netip"
	"testing"

	"github.com/pion/stun/v4"

	"github.com/turnd/turnd/internal/gate"
	"github.com/turnd/turnd/internal/mmsg"
)

// BenchmarkPerPacket is the edge's own work on each client packet, past the
// fast path: a datagram handed to the gate (the fast path declining it), and
// pion's writes to a UDP and a stream client.
func BenchmarkPerPacket(b *testing.B) {
	e := New(gate.New(&gate.Policy{}, gate.Hooks{Accepting: func() bool { return true }}), nil)
	udp, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		b.Fatal(err)
	}
	sock, err := mmsg.Adopt(udp)
	if err != nil {
		b.Fatal(err)
	}
	defer sock.Close()
	pc, err := e.PacketConn(sock, nil, func([]byte, netip.AddrPort) bool { return false })
	if err != nil {
		b.Fatal(err)
	}
	uc := pc.(*packetConn)
	// Nobody reads the client's socket: the kernel drops what overflows it.
	client, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		b.Fatal(err)
	}
	defer client.Close()
	to := client.LocalAddr()
	from := client.LocalAddr().(*net.UDPAddr).AddrPort()
	sc := &streamConn{
		Conn: &fixedConn{
			remote: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2), Port: 40000},
			local:  &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 3478},
		},
		e: e,
	}
	m, err := stun.Build(stun.TransactionID, stun.NewType(stun.MethodData, stun.ClassIndication),
		stun.RawAttribute{Type: stun.AttrData, Value: make([]byte, 160)})
	if err != nil {
		b.Fatal(err)
	}
	data := m.Raw
	channelData := append([]byte{0x40, 0x01, 0x00, 0xa0}, make([]byte, 160)...)
	for _, bc := range []struct {
		name string
		f    func()
	}{
		{"udp read ChannelData", func() { _, _, _, _ = uc.handle(channelData, from) }},
		{"udp write Data indication", func() { _, _ = uc.WriteTo(data, to) }},
		{"stream write ChannelData", func() { _, _ = sc.Write(channelData) }},
		{"stream write Data indication", func() { _, _ = sc.Write(data) }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for range b.N {
				bc.f()
			}
		})
	}
}
