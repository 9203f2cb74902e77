package wire_test

import (
	"bytes"
	"net/netip"
	"testing"

	"github.com/pion/stun/v4"

	"github.com/turnd/turnd/internal/wire"
)

// TestDataIndicationDecodes: what PutDataIndication writes is a Data
// indication pion reads back with the same peer and payload, for both
// families and every padding.
func TestDataIndicationDecodes(t *testing.T) {
	for _, peer := range []netip.AddrPort{
		netip.MustParseAddrPort("192.0.2.1:5000"), netip.MustParseAddrPort("[2001:db8::1]:5000"),
	} {
		for n := range 5 {
			head := wire.DataIndicationHead4
			if !peer.Addr().Is4() {
				head = wire.DataIndicationHead6
			}
			payload := bytes.Repeat([]byte{'x'}, n)
			b := make([]byte, head+n+3)
			total := wire.PutDataIndication(b[:head], [12]byte{1, 2, 3}, peer, n)
			copy(b[head:], payload)
			msg := &stun.Message{Raw: b[:total]}
			if err := msg.Decode(); err != nil {
				t.Fatalf("%v, %d bytes: %v", peer, n, err)
			}
			var x stun.XORMappedAddress
			if err := x.GetFromAs(msg, stun.AttrXORPeerAddress); err != nil {
				t.Fatal(err)
			}
			got, _ := msg.Get(stun.AttrData)
			ip, _ := netip.AddrFromSlice(x.IP)
			if msg.Type != stun.NewType(stun.MethodData, stun.ClassIndication) || !bytes.Equal(got, payload) ||
				netip.AddrPortFrom(ip.Unmap(), uint16(x.Port)) != peer {
				t.Fatalf("pion reads %v from %v, %q from %q", x, peer, got, payload)
			}
		}
	}
}

// TestReadersDoNotAllocate: the per-packet readers and writers work in place.
func TestReadersDoNotAllocate(t *testing.T) {
	send, err := stun.Build(stun.TransactionID, stun.NewType(stun.MethodSend, stun.ClassIndication),
		setter(func(m *stun.Message) error {
			return (&stun.XORMappedAddress{IP: []byte{192, 0, 2, 1}, Port: 5000}).AddToAs(m, stun.AttrXORPeerAddress)
		}),
		stun.RawAttribute{Type: stun.AttrData, Length: 3, Value: []byte("abc")}, stun.Fingerprint)
	if err != nil {
		t.Fatal(err)
	}
	frame := []byte{0x40, 0x01, 0x00, 0x02, 'h', 'i', 0, 0}
	out := make([]byte, wire.DataIndicationHead6)
	peer := netip.MustParseAddrPort("[2001:db8::1]:5000")
	allocs := testing.AllocsPerRun(100, func() {
		if _, _, ok := wire.ParseSend(send.Raw); !ok {
			t.Fatal("Send indication not parsed")
		}
		if _, ok := wire.FrameSize(frame); !ok || !wire.IsData(frame) {
			t.Fatal("ChannelData not framed")
		}
		wire.PutDataIndication(out, [12]byte{}, peer, 3)
		wire.Lifetime(send.Raw)
	})
	if allocs != 0 {
		t.Fatalf("%v allocations", allocs)
	}
}

func BenchmarkParseSend(b *testing.B) {
	send, err := stun.Build(stun.TransactionID, stun.NewType(stun.MethodSend, stun.ClassIndication),
		setter(func(m *stun.Message) error {
			return (&stun.XORMappedAddress{IP: []byte{192, 0, 2, 1}, Port: 5000}).AddToAs(m, stun.AttrXORPeerAddress)
		}),
		stun.RawAttribute{Type: stun.AttrData, Length: 160, Value: make([]byte, 160)}, stun.Fingerprint)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		wire.ParseSend(send.Raw)
	}
}
