package turn_test

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/pion/stun/v4"
)

// FuzzServeSigned reaches the method handlers, which FuzzServe's mutations
// rarely do (a changed byte breaks the HMAC): the fuzzer picks the method,
// the client (UDP or TCP, one of a few, so allocations accumulate) and the
// attributes, and the harness signs them as alice. It must not panic,
// answers at most once, and every answer to it is signed with alice's key.
func FuzzServeSigned(f *testing.F) {
	e := newEnv(f)
	tlv := func(t stun.AttrType, v ...byte) []byte {
		b := binary.BigEndian.AppendUint16(nil, uint16(t))
		b = binary.BigEndian.AppendUint16(b, uint16(len(v))) //nolint:gosec // a short seed
		b = append(b, v...)
		for len(b)%4 != 0 {
			b = append(b, 0)
		}
		return b
	}
	peer := []byte{0, 1, 0x21, 0x1B, 0xE1, 0x12, 0xA6, 0x43} // 192.0.2.1:9, XORed with the magic cookie
	for _, s := range []struct {
		method uint16
		client byte
		attrs  []byte
	}{
		{uint16(stun.MethodAllocate), 1, tlv(stun.AttrRequestedTransport, 17, 0, 0, 0)},
		{uint16(stun.MethodAllocate), 2, append(tlv(stun.AttrRequestedTransport, 17, 0, 0, 0), tlv(0x8000, 2, 0, 0, 0)...)},
		{uint16(stun.MethodAllocate), 3, append(tlv(stun.AttrRequestedTransport, 17, 0, 0, 0), tlv(stun.AttrEvenPort, 0x80)...)},
		{uint16(stun.MethodAllocate), 0x84, tlv(stun.AttrRequestedTransport, 6, 0, 0, 0)},
		{uint16(stun.MethodRefresh), 1, tlv(stun.AttrLifetime, 0, 0, 0, 0)},
		{uint16(stun.MethodRefresh), 2, append(tlv(stun.AttrRequestedAddressFamily, 2, 0, 0, 0), tlv(stun.AttrLifetime, 0, 0, 0, 0)...)},
		{uint16(stun.MethodCreatePermission), 1, tlv(stun.AttrXORPeerAddress, peer...)},
		{uint16(stun.MethodChannelBind), 1, append(tlv(stun.AttrChannelNumber, 0x40, 0, 0, 0), tlv(stun.AttrXORPeerAddress, peer...)...)},
		{uint16(stun.MethodConnect), 0x84, tlv(stun.AttrXORPeerAddress, peer...)},
		{0x000B, 0x85, tlv(stun.AttrConnectionID, 0, 0, 0, 1)},
	} {
		f.Add(s.method, s.client, s.attrs)
	}
	key := aliceUser().key
	f.Fuzz(func(t *testing.T, method uint16, client byte, attrs []byte) {
		m := stun.New()
		m.TransactionID = stun.NewTransactionID()
		m.SetType(stun.NewType(stun.Method(method&0x0FFF), stun.ClassRequest))
		m.WriteHeader()
		for len(attrs) >= 4 {
			typ, n := binary.BigEndian.Uint16(attrs), int(binary.BigEndian.Uint16(attrs[2:]))
			attrs = attrs[4:]
			if n > len(attrs) {
				break
			}
			if !credential(stun.AttrType(typ)) {
				m.Add(stun.AttrType(typ), attrs[:n])
			}
			attrs = attrs[min(len(attrs), (n+3)&^3):]
		}
		for _, s := range []stun.Setter{stun.NewUsername(alice), stun.NewRealm(realm),
			stun.NewNonce(e.nonces.Issue(e.clock.Now())), stun.MessageIntegrity(key), stun.Fingerprint} {
			if err := s.AddTo(m); err != nil {
				t.Fatal(err)
			}
		}
		c, _ := udpClient(client & 0x0F)
		if client&0x80 != 0 {
			c, _ = tcpClient(client & 0x0F)
		}
		e.h.Serve(m.Raw, c)
		var got [][]byte
		if s, ok := c.Stream.(*stream); ok {
			got = s.take()
		} else {
			got = c.Lane.(*lane).take()
		}
		if len(got) > 1 {
			t.Fatalf("%d answers to one request", len(got))
		}
		for _, b := range got {
			resp := &stun.Message{Raw: b}
			if err := resp.Decode(); err != nil {
				t.Fatalf("answer does not decode: %v", err)
			}
			if turnMethod(resp.Type.Method) && !signedWith(resp, key) {
				t.Fatalf("answer %v %v not signed", resp.Type, attrTypes(resp))
			}
		}
		e.clock.Advance(time.Second)
	})
}

// credential reports whether t is an attribute the harness signs with (or
// one that would end the signed part), which the fuzzer must not set.
func credential(t stun.AttrType) bool {
	switch t {
	case stun.AttrUsername, stun.AttrRealm, stun.AttrNonce, stun.AttrMessageIntegrity,
		stun.AttrMessageIntegritySHA256, stun.AttrFingerprint, stun.AttrUserhash:
		return true
	}
	return false
}

// turnMethod reports whether m is a method whose answers are authenticated.
func turnMethod(m stun.Method) bool {
	switch m {
	case stun.MethodAllocate, stun.MethodRefresh, stun.MethodCreatePermission, stun.MethodChannelBind,
		stun.MethodConnect, 0x000B:
		return true
	}
	return false
}
