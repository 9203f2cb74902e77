package relay

import (
	"net"
	"testing"

	"github.com/pion/stun/v4"
)

// FuzzParseSend: the Send indication parser of the uplink fast path reads
// client bytes in place; it must never panic or read outside them, and what
// it accepts must be what pion's decoder sees.
func FuzzParseSend(f *testing.F) {
	m, _ := stun.Build(stun.TransactionID, stun.NewType(stun.MethodSend, stun.ClassIndication),
		xorPeer{peerForFuzz}, stun.RawAttribute{Type: stun.AttrData, Length: 3, Value: []byte("abc")})
	f.Add(m.Raw)
	f.Add([]byte{0x00, 0x16, 0x00, 0x00, 0x21, 0x12, 0xa4, 0x42, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12})
	f.Fuzz(func(t *testing.T, pkt []byte) {
		peer, data, ok := parseSend(pkt)
		if !ok {
			return
		}
		msg := &stun.Message{Raw: append([]byte(nil), pkt...)}
		if err := msg.Decode(); err != nil {
			return // the fast path is laxer about trailing bytes; pion never sees what it took
		}
		got, err := msg.Get(stun.AttrData)
		if err == nil && string(got) != string(data) {
			t.Fatalf("DATA %x, pion reads %x", data, got)
		}
		if !peer.IsValid() {
			t.Fatal("accepted without a valid peer")
		}
	})
}

// FuzzChannelData: the ChannelData fast path with an unknown channel or a
// short packet must refuse without panicking.
func FuzzChannelData(f *testing.F) {
	f.Add([]byte{0x40, 0x00, 0x00, 0x02, 'h', 'i'})
	f.Add([]byte{0x40, 0x00, 0xff, 0xff})
	relay := New(Options{}).RelayStreamFor(&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 3478})
	f.Fuzz(func(t *testing.T, pkt []byte) {
		relay(pkt, peerForFuzz.AddrPort())
	})
}
