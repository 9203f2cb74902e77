package wire_test

import (
	"bytes"
	"encoding/binary"
	"net"
	"net/netip"
	"testing"

	"github.com/pion/stun/v4"

	"github.com/turnd/turnd/internal/wire"
)

// FuzzWire: every reader of this package works in place on client bytes; it
// must never panic or read outside them, and where pion/stun's decoder
// accepts a message, the walk, ParseSend, Lifetime and FingerprintOK must
// see what pion sees. FrameSize and the ChannelData reads keep their framing
// rules on any bytes.
func FuzzWire(f *testing.F) {
	for _, seed := range seeds(f) {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, pkt []byte) {
		checkFraming(t, pkt)
		attrs := walk(t, pkt)
		peer, data, ok := wire.ParseSend(pkt)
		if ok && (!peer.IsValid() || len(attrs) == 0 || attrs[len(attrs)-1].truncated || wire.HeaderSize+wire.BodyLength(pkt) > len(pkt)) {
			t.Fatal("ParseSend accepted a truncated message or no valid peer")
		}
		msg := &stun.Message{Raw: append([]byte(nil), pkt...)}
		if msg.Decode() != nil {
			return // the readers are laxer than pion about padding; pion never sees what they took
		}
		checkWalk(t, msg, attrs)
		checkFingerprint(t, pkt, msg, attrs)
		if msg.Contains(stun.AttrMessageIntegrity) || msg.Contains(stun.AttrMessageIntegritySHA256) {
			return // pion drops what follows an integrity attribute; the readers do not
		}
		checkSend(t, pkt, msg, peer, data, ok)
		checkLifetime(t, pkt, msg)
	})
}

func seeds(f *testing.F) [][]byte {
	peer := &stun.XORMappedAddress{IP: net.IPv4(192, 0, 2, 1), Port: 5000}
	peer6 := &stun.XORMappedAddress{IP: net.ParseIP("2001:db8::1"), Port: 5000}
	send := stun.NewType(stun.MethodSend, stun.ClassIndication)
	data := stun.RawAttribute{Type: stun.AttrData, Length: 3, Value: []byte("abc")}
	asPeer := func(a *stun.XORMappedAddress) stun.Setter {
		return setter(func(m *stun.Message) error { return a.AddToAs(m, stun.AttrXORPeerAddress) })
	}
	var out [][]byte
	for _, setters := range [][]stun.Setter{
		{stun.TransactionID, send, asPeer(peer), data},
		{stun.TransactionID, send, asPeer(peer6), data, stun.Fingerprint},
		{stun.TransactionID, stun.NewType(stun.MethodAllocate, stun.ClassSuccessResponse),
			stun.RawAttribute{Type: stun.AttrLifetime, Length: 4, Value: []byte{0, 0, 2, 0x58}}, stun.Fingerprint},
		{stun.TransactionID, stun.NewType(stun.MethodRefresh, stun.ClassRequest), stun.MessageIntegrity("key"), stun.Fingerprint},
	} {
		m, err := stun.Build(setters...)
		if err != nil {
			f.Fatal(err)
		}
		out = append(out, m.Raw)
	}
	bad := append([]byte(nil), out[2]...) // the Allocate success
	bad[len(bad)-1] ^= 1                  // a FINGERPRINT that does not match
	badSend := append([]byte(nil), out[1]...)
	badSend[len(badSend)-1] ^= 1
	return append(out, bad, badSend,
		[]byte{0x00, 0x16, 0x00, 0x00, 0x21, 0x12, 0xa4, 0x42, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12},
		[]byte{0x40, 0x01, 0x00, 0x02, 'h', 'i', 0, 0},
		[]byte{0x40, 0x01, 0xff, 0xff},
		[]byte{0x80, 0, 0, 0},
	)
}

type setter func(m *stun.Message) error

func (s setter) AddTo(m *stun.Message) error { return s(m) }

type attr struct {
	typ       uint16
	at        int
	value     []byte
	truncated bool
}

// walk collects the walk of pkt, checking that it stays inside the message
// and that only the last attribute may be truncated.
func walk(t *testing.T, pkt []byte) []attr {
	var out []attr
	end := 0
	if len(pkt) >= wire.HeaderSize {
		end = min(len(pkt), wire.HeaderSize+wire.BodyLength(pkt))
	}
	a := wire.Walk(pkt)
	for a.Next() {
		if len(out) > 0 && out[len(out)-1].truncated {
			t.Fatal("the walk went on past a truncated attribute")
		}
		if a.Offset()+4 > end {
			t.Fatalf("attribute header at %d past the end %d", a.Offset(), end)
		}
		v := a.Value()
		if a.Truncated() != (v == nil) || (!a.Truncated() && len(v) != a.Len()) {
			t.Fatalf("value of %d bytes for length %d, truncated %v", len(v), a.Len(), a.Truncated())
		}
		out = append(out, attr{a.Type(), a.Offset(), v, a.Truncated()})
	}
	return out
}

// checkWalk: pion's attributes are the walk's, minus those it drops after
// an integrity attribute, none truncated.
func checkWalk(t *testing.T, msg *stun.Message, attrs []attr) {
	i := 0
	for _, a := range attrs {
		if a.truncated {
			t.Fatal("pion decodes an attribute the walk calls truncated")
		}
		if i < len(msg.Attributes) && bytes.Equal(msg.Attributes[i].Value, a.value) &&
			(uint16(msg.Attributes[i].Type) == a.typ || a.typ == 0x8020) {
			i++
		}
	}
	if i != len(msg.Attributes) {
		t.Fatalf("pion decodes %d attributes, the walk matches %d of them", len(msg.Attributes), i)
	}
}

// checkSend: ParseSend takes a Send indication exactly when pion reads a
// DATA and well-formed XOR-PEER-ADDRESSes in it, and reads the same (the
// last of each).
func checkSend(t *testing.T, pkt []byte, msg *stun.Message, peer netip.AddrPort, data []byte, ok bool) {
	var lastPeer, lastData []byte
	wellFormed, haveData := true, false
	for _, a := range msg.Attributes {
		switch a.Type {
		case stun.AttrXORPeerAddress:
			lastPeer = a.Value
			v := a.Value
			wellFormed = wellFormed && len(v) >= 4 && (v[1] == 1 && len(v) == 8 || v[1] == 2 && len(v) == 20)
		case stun.AttrData:
			lastData, haveData = a.Value, true
		}
	}
	want := binary.BigEndian.Uint16(pkt) == wire.TypeSendIndication && lastPeer != nil && wellFormed && haveData
	if msg.Contains(stun.AttrFingerprint) {
		whole := &stun.Message{Raw: pkt[:wire.HeaderSize+wire.BodyLength(pkt)]}
		fingerprints := 0
		for _, a := range msg.Attributes {
			if a.Type == stun.AttrFingerprint {
				fingerprints++
			}
		}
		last := msg.Attributes[len(msg.Attributes)-1].Type == stun.AttrFingerprint
		if fingerprints > 1 || !last || whole.Decode() != nil || len(whole.Attributes) != len(msg.Attributes) {
			return // pion checks one FINGERPRINT, as the last attribute
		}
		want = want && stun.Fingerprint.Check(whole) == nil
	}
	if ok != want {
		t.Fatalf("ParseSend ok %v, pion reads a Send indication %v", ok, want)
	}
	if !ok {
		return
	}
	if !bytes.Equal(data, lastData) {
		t.Fatalf("DATA %x, pion reads %x", data, lastData)
	}
	one := &stun.Message{TransactionID: msg.TransactionID}
	one.WriteHeader()
	// RFC 8489 §14.1: receivers ignore the first byte; pion reads it as part of the family.
	one.Add(stun.AttrXORPeerAddress, append([]byte{0}, lastPeer[1:]...))
	var x stun.XORMappedAddress
	if err := x.GetFromAs(one, stun.AttrXORPeerAddress); err != nil {
		t.Fatalf("pion cannot read the peer ParseSend read: %v", err)
	}
	ip, _ := netip.AddrFromSlice(x.IP)
	if want := netip.AddrPortFrom(ip, uint16(x.Port)); peer != want {
		t.Fatalf("peer %v, pion reads %v", peer, want)
	}
}

// checkLifetime: Lifetime reads pion's first four-byte LIFETIME.
func checkLifetime(t *testing.T, pkt []byte, msg *stun.Message) {
	got, ok := wire.Lifetime(pkt)
	for _, a := range msg.Attributes {
		if a.Type == stun.AttrLifetime && len(a.Value) == 4 {
			if want := binary.BigEndian.Uint32(a.Value); !ok || got != want {
				t.Fatalf("LIFETIME %d (%v), pion reads %d", got, ok, want)
			}
			return
		}
	}
	if ok {
		t.Fatalf("LIFETIME %d where pion reads none", got)
	}
}

// checkFingerprint: where pion can check a FINGERPRINT (one, at the end),
// FingerprintOK agrees with it.
func checkFingerprint(t *testing.T, pkt []byte, msg *stun.Message, attrs []attr) {
	n := 0
	for _, a := range attrs {
		if a.typ == wire.AttrFingerprint {
			n++
		}
	}
	if n != 1 || attrs[len(attrs)-1].typ != wire.AttrFingerprint {
		return
	}
	msg.Raw = msg.Raw[:wire.HeaderSize+wire.BodyLength(pkt)]
	var got bool
	a := wire.Walk(pkt)
	for a.Next() {
		if a.Type() == wire.AttrFingerprint {
			got = wire.FingerprintOK(pkt, &a)
		}
	}
	if want := stun.Fingerprint.Check(msg) == nil; got != want {
		t.Fatalf("FINGERPRINT ok %v, pion says %v", got, want)
	}
}

// checkFraming: FrameSize, IsChannelData, ParseChannelData and IsData
// agree on any bytes.
func checkFraming(t *testing.T, b []byte) {
	if wire.IsData(b) != (wire.IsChannelData(b) || wire.IsSendIndication(b)) {
		t.Fatal("IsData disagrees with IsChannelData and IsSendIndication")
	}
	num, payload, ok := wire.ParseChannelData(b)
	if ok && (!wire.IsChannelData(b) || num != binary.BigEndian.Uint16(b) || len(payload) != int(binary.BigEndian.Uint16(b[2:]))) {
		t.Fatalf("ParseChannelData: channel %#x, %d bytes, for % x", num, len(payload), b)
	}
	if len(b) < 4 {
		return
	}
	size, ok := wire.FrameSize(b)
	switch {
	case ok != (b[0]&0xC0 == 0 || wire.IsChannelData(b)):
		t.Fatalf("FrameSize ok %v for first byte %#x", ok, b[0])
	case !ok:
	case wire.IsChannelData(b):
		n := int(binary.BigEndian.Uint16(b[2:]))
		if size%4 != 0 || size < 4+n || size >= 4+n+4 {
			t.Fatalf("ChannelData of %d bytes framed as %d", n, size)
		}
		if _, p, ok := wire.ParseChannelData(b[:min(size, len(b))]); len(b) >= size && (!ok || len(p) != n) {
			t.Fatalf("a whole frame does not parse: %v, %d bytes", ok, len(p))
		}
	case size != wire.HeaderSize+wire.BodyLength(b):
		t.Fatalf("STUN frame of %d bytes", size)
	}
}
