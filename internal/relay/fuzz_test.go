package relay

import (
	"bytes"
	"encoding/binary"
	"net"
	"testing"
	"time"

	"github.com/turnd/turnd/internal/wire"
)

// FuzzChannelData: the ChannelData fast path relays a whole frame on the
// bound channel to its peer, payload without padding, and refuses anything
// else (another channel, a short or truncated frame) without panicking.
func FuzzChannelData(f *testing.F) {
	const bound = 0x4001
	f.Add([]byte{0x40, 0x01, 0x00, 0x02, 'h', 'i'})
	f.Add([]byte{0x40, 0x01, 0x00, 0x02, 'h', 'i', 0, 0}) // padded, as over TCP
	f.Add([]byte{0x40, 0x01, 0x00, 0x00})
	f.Add([]byte{0x40, 0x02, 0x00, 0x02, 'h', 'i'})
	f.Add([]byte{0x40, 0x01, 0xff, 0xff})
	f.Add([]byte{0x40, 0x01, 0x00})
	r := newFastPathRig(f)
	client := r.client.LocalAddr().(*net.UDPAddr).AddrPort()
	buf := make([]byte, 1<<16)
	f.Fuzz(func(t *testing.T, pkt []byte) {
		if len(pkt) >= 2 && pkt[0] == 0 && pkt[1] == wire.TypeSendIndication {
			return // FuzzWire's ground (internal/wire)
		}
		var payload []byte
		want := len(pkt) >= 4 && binary.BigEndian.Uint16(pkt) == bound
		if want {
			n := int(binary.BigEndian.Uint16(pkt[2:]))
			want = 4+n <= len(pkt)
			if want {
				payload = pkt[4 : 4+n]
			}
		}
		if got := r.up(pkt, client); got != want {
			t.Fatalf("relayed %v, want %v, for % x", got, want, pkt)
		}
		if !want {
			return
		}
		_ = r.peer.SetReadDeadline(time.Now().Add(2 * time.Second))
		n, err := r.peer.Read(buf)
		if err != nil || !bytes.Equal(buf[:n], payload) {
			t.Fatalf("peer got % x (%v), want % x", buf[:n], err, payload)
		}
	})
}
