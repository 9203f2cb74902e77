package main

import (
	"bytes"
	"encoding/binary"
	"net"
	"testing"

	"github.com/pion/stun/v4"
	"golang.org/x/sys/unix"
)

func TestChannelFrameRoundTrip(t *testing.T) {
	f := newChannelFrame(0x4001, 100)
	f.stamp(123456789, 7, 42)
	if got := binary.BigEndian.Uint16(f.buf[0:2]); got != 0x4001 {
		t.Errorf("channel %#x", got)
	}
	p := incomingPayload(f.buf)
	if len(p) != 100 {
		t.Fatalf("payload length %d", len(p))
	}
	sent, client, seq, ok := readPayload(p)
	if !ok || sent != 123456789 || client != 7 || seq != 42 {
		t.Errorf("read back %d %d %d %v", sent, client, seq, ok)
	}
}

func TestSendFrameIsValidSTUN(t *testing.T) {
	peer := &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 5000}
	f, err := newSendFrame(peer, 101)
	if err != nil {
		t.Fatal(err)
	}
	f.stamp(99, 3, 4)
	m := &stun.Message{Raw: append([]byte(nil), f.buf...)}
	if err := m.Decode(); err != nil {
		t.Fatalf("decode: %v", err)
	}
	if m.Type != stun.NewType(stun.MethodSend, stun.ClassIndication) {
		t.Errorf("type %v", m.Type)
	}
	var pa stun.XORMappedAddress
	if err := pa.GetFromAs(m, stun.AttrXORPeerAddress); err != nil || pa.Port != 5000 {
		t.Errorf("peer %v %v", pa, err)
	}
	d, err := m.Get(stun.AttrData)
	if err != nil || len(d) != 101 {
		t.Fatalf("data %d %v", len(d), err)
	}
	if sent, client, seq, _ := readPayload(d); sent != 99 || client != 3 || seq != 4 {
		t.Errorf("payload %d %d %d", sent, client, seq)
	}
}

// dataIndication builds what a server sends: a Data indication with
// XOR-PEER-ADDRESS before DATA.
func dataIndicationOf(t *testing.T, payload []byte) []byte {
	t.Helper()
	m, err := stun.Build(stun.TransactionID, stun.NewType(stun.MethodData, stun.ClassIndication),
		xorPeerAddress{&net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 5000}}, data(payload), stun.Fingerprint)
	if err != nil {
		t.Fatal(err)
	}
	return m.Raw
}

func TestIncomingPayload(t *testing.T) {
	payload := bytes.Repeat([]byte{0xAB}, 21)
	ind := dataIndicationOf(t, payload)
	tests := []struct {
		name string
		in   []byte
		want []byte
	}{
		{"channel data", append([]byte{0x40, 0x00, 0x00, 0x03}, 1, 2, 3), []byte{1, 2, 3}},
		{"channel data with padding", []byte{0x40, 0x00, 0x00, 0x02, 1, 2, 0, 0}, []byte{1, 2}},
		{"channel data truncated", []byte{0x40, 0x00, 0x00, 0x09, 1, 2}, nil},
		{"data indication", ind, payload},
		{"data indication truncated", ind[:len(ind)-20], nil},
		{"other STUN", mustBuild(t, stun.NewType(stun.MethodRefresh, stun.ClassSuccessResponse)), nil},
		{"short", []byte{0x40}, nil},
		{"empty", nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := incomingPayload(tt.in); !bytes.Equal(got, tt.want) {
				t.Errorf("got %x, want %x", got, tt.want)
			}
		})
	}
}

func mustBuild(t *testing.T, typ stun.MessageType) []byte {
	t.Helper()
	m, err := stun.Build(stun.TransactionID, typ)
	if err != nil {
		t.Fatal(err)
	}
	return m.Raw
}

func TestRxTimestamp(t *testing.T) {
	cmsg := func(level, typ int32, data []byte) []byte {
		b := make([]byte, cmsgHeader, cmsgHeader+len(data)+8)
		binary.NativeEndian.PutUint64(b[0:8], uint64(cmsgHeader+len(data)))
		binary.NativeEndian.PutUint32(b[8:12], uint32(level))
		binary.NativeEndian.PutUint32(b[12:16], uint32(typ))
		b = append(b, data...)
		for len(b)%8 != 0 {
			b = append(b, 0)
		}
		return b
	}
	ts := make([]byte, 16)
	binary.NativeEndian.PutUint64(ts[0:8], 1700000000)
	binary.NativeEndian.PutUint64(ts[8:16], 123)
	want := int64(1700000000)*1e9 + 123
	tests := []struct {
		name string
		oob  []byte
		ok   bool
	}{
		{"timestamp alone", cmsg(unix.SOL_SOCKET, unix.SCM_TIMESTAMPNS, ts), true},
		{"after another message", append(cmsg(unix.IPPROTO_IP, 8, []byte{1, 2, 3, 4}), cmsg(unix.SOL_SOCKET, unix.SCM_TIMESTAMPNS, ts)...), true},
		{"absent", cmsg(unix.IPPROTO_IP, 8, []byte{1, 2, 3, 4}), false},
		{"bad length", []byte{200, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 35, 0, 0, 0}, false},
		{"empty", nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := rxTimestamp(tt.oob)
			if ok != tt.ok || (ok && got != want) {
				t.Errorf("got %d %v", got, ok)
			}
		})
	}
}

func BenchmarkIncomingPayload(b *testing.B) {
	f := newChannelFrame(0x4000, 100)
	b.ReportAllocs()
	for range b.N {
		if p := incomingPayload(f.buf); len(p) != 100 {
			b.Fatal(len(p))
		}
	}
}

func BenchmarkStampSendFrame(b *testing.B) {
	f, err := newSendFrame(&net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 5000}, 100)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for i := range b.N {
		f.stamp(int64(i), 1, uint32(i))
	}
}
