package edge

import (
	"net"
	"testing"

	"github.com/pion/stun/v4"

	"github.com/turnd/turnd/internal/gate"
	"github.com/turnd/turnd/internal/mmsg"
)

// TestPacketConnWriteDoesNotAllocate: what pion writes to a UDP client
// (ChannelData, Data indications) goes past the gate's look without an
// allocation.
func TestPacketConnWriteDoesNotAllocate(t *testing.T) {
	e := New(gate.New(&gate.Policy{}, gate.Hooks{Accepting: func() bool { return true }}), nil)
	listen := func() *net.UDPConn {
		c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	sock, err := mmsg.Adopt(listen())
	if err != nil {
		t.Fatal(err)
	}
	pc, err := e.PacketConn(sock, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	to := listen().LocalAddr() // never read: the kernel drops what overflows it
	m, err := stun.Build(stun.TransactionID, stun.NewType(stun.MethodData, stun.ClassIndication),
		stun.RawAttribute{Type: stun.AttrData, Value: make([]byte, 160)})
	if err != nil {
		t.Fatal(err)
	}
	for name, pkt := range map[string][]byte{
		"ChannelData":     append([]byte{0x40, 0x01, 0x00, 0xa0}, make([]byte, 160)...),
		"Data indication": m.Raw,
	} {
		if a := testing.AllocsPerRun(200, func() { _, _ = pc.WriteTo(pkt, to) }); a != 0 {
			t.Errorf("write %s: %.1f allocations per packet, want 0", name, a)
		}
	}
}
