package deploytest

import (
	"crypto/hmac"
	"crypto/md5"
	"crypto/rand"
	"crypto/sha1"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"net/netip"
)

// A minimal STUN codec (RFC 8489) for the TURN methods these tests use. It is
// written out here rather than imported because this module runs turnd only
// as a binary and keeps no dependency on turnd's packages (Go forbids
// importing turnd/internal/testturn from another module) or on pion's.

const (
	magicCookie = 0x2112A442
	headerLen   = 20

	methodAllocate         = 0x003
	methodRefresh          = 0x004
	methodSend             = 0x006
	methodData             = 0x007
	methodCreatePermission = 0x008

	classRequest    = 0x000
	classIndication = 0x010
	classSuccess    = 0x100
	classError      = 0x110

	attrUsername           = 0x0006
	attrMessageIntegrity   = 0x0008
	attrErrorCode          = 0x0009
	attrLifetime           = 0x000D
	attrXORPeerAddress     = 0x0012
	attrData               = 0x0013
	attrRealm              = 0x0014
	attrNonce              = 0x0015
	attrXORRelayedAddress  = 0x0016
	attrRequestedTransport = 0x0019
	attrFingerprint        = 0x8028
)

var errNotSTUN = errors.New("not a STUN message")

// stunAttr is one attribute: type and value.
type stunAttr struct {
	typ uint16
	val []byte
}

// stunMsg is a decoded message; attributes keep their first occurrence.
type stunMsg struct {
	typ   uint16
	tid   [12]byte
	attrs map[uint16][]byte
	raw   []byte
	// miAt is the offset of MESSAGE-INTEGRITY in raw, or -1.
	miAt int
}

// encodeSTUN builds a message; with key it adds MESSAGE-INTEGRITY, and it
// always ends with FINGERPRINT.
func encodeSTUN(typ uint16, tid [12]byte, key []byte, attrs ...stunAttr) []byte {
	b := make([]byte, headerLen, 256)
	binary.BigEndian.PutUint16(b[0:], typ)
	binary.BigEndian.PutUint32(b[4:], magicCookie)
	copy(b[8:], tid[:])
	for _, a := range attrs {
		b = appendAttr(b, a.typ, a.val)
	}
	if key != nil {
		// The length covers MESSAGE-INTEGRITY itself while it is computed.
		binary.BigEndian.PutUint16(b[2:], uint16(len(b)-headerLen+24))
		mac := hmac.New(sha1.New, key)
		mac.Write(b)
		b = appendAttr(b, attrMessageIntegrity, mac.Sum(nil))
	}
	binary.BigEndian.PutUint16(b[2:], uint16(len(b)-headerLen+8))
	fp := make([]byte, 4)
	binary.BigEndian.PutUint32(fp, crc32.ChecksumIEEE(b)^0x5354554e)
	return appendAttr(b, attrFingerprint, fp)
}

func appendAttr(b []byte, typ uint16, val []byte) []byte {
	b = binary.BigEndian.AppendUint16(b, typ)
	b = binary.BigEndian.AppendUint16(b, uint16(len(val)))
	b = append(b, val...)
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	return b
}

// decodeSTUN parses one whole message.
func decodeSTUN(raw []byte) (*stunMsg, error) {
	if len(raw) < headerLen || binary.BigEndian.Uint32(raw[4:]) != magicCookie || raw[0]&0xC0 != 0 {
		return nil, errNotSTUN
	}
	n := int(binary.BigEndian.Uint16(raw[2:]))
	if headerLen+n > len(raw) {
		return nil, fmt.Errorf("decode stun: length %d beyond %d bytes", n, len(raw))
	}
	m := &stunMsg{typ: binary.BigEndian.Uint16(raw), attrs: map[uint16][]byte{}, raw: raw[:headerLen+n], miAt: -1}
	copy(m.tid[:], raw[8:20])
	for off := headerLen; off+4 <= headerLen+n; {
		typ, l := binary.BigEndian.Uint16(raw[off:]), int(binary.BigEndian.Uint16(raw[off+2:]))
		if off+4+l > headerLen+n {
			return nil, fmt.Errorf("decode stun: attribute %#x overruns the message", typ)
		}
		if _, dup := m.attrs[typ]; !dup {
			m.attrs[typ] = raw[off+4 : off+4+l]
		}
		if typ == attrMessageIntegrity && m.miAt < 0 {
			m.miAt = off
		}
		off += 4 + (l+3)&^3
	}
	return m, nil
}

// errorCode is the response's ERROR-CODE, 0 for none.
func (m *stunMsg) errorCode() int {
	v := m.attrs[attrErrorCode]
	if len(v) < 4 {
		return 0
	}
	return int(v[2]&7)*100 + int(v[3])
}

// signedWith reports whether MESSAGE-INTEGRITY verifies with key.
func (m *stunMsg) signedWith(key []byte) bool {
	if m.miAt < 0 || key == nil || len(m.attrs[attrMessageIntegrity]) != sha1.Size {
		return false
	}
	b := append([]byte(nil), m.raw[:m.miAt]...)
	binary.BigEndian.PutUint16(b[2:], uint16(m.miAt-headerLen+24))
	mac := hmac.New(sha1.New, key)
	mac.Write(b)
	return hmac.Equal(mac.Sum(nil), m.raw[m.miAt+4:m.miAt+24])
}

// xorAddr decodes an XOR-*-ADDRESS attribute (IPv4 only: these tests never
// use IPv6).
func (m *stunMsg) xorAddr(typ uint16) (netip.AddrPort, error) {
	v := m.attrs[typ]
	if len(v) != 8 || v[1] != 1 {
		return netip.AddrPort{}, fmt.Errorf("attribute %#x: want an IPv4 XOR address, got %x", typ, v)
	}
	port := binary.BigEndian.Uint16(v[2:]) ^ magicCookie>>16
	ip := binary.BigEndian.Uint32(v[4:]) ^ magicCookie
	return netip.AddrPortFrom(netip.AddrFrom4([4]byte(binary.BigEndian.AppendUint32(nil, ip))), port), nil
}

// xorAddrValue encodes an IPv4 XOR-*-ADDRESS value.
func xorAddrValue(a netip.AddrPort) []byte {
	v := []byte{0, 1}
	v = binary.BigEndian.AppendUint16(v, a.Port()^magicCookie>>16)
	ip4 := a.Addr().As4()
	return binary.BigEndian.AppendUint32(v, binary.BigEndian.Uint32(ip4[:])^magicCookie)
}

func newTID() [12]byte {
	var tid [12]byte
	_, _ = rand.Read(tid[:])
	return tid
}

// longTermKey is MD5(username:realm:password) (RFC 8489 section 9.2.2).
func longTermKey(user, realm, pass string) []byte {
	sum := md5.Sum([]byte(user + ":" + realm + ":" + pass))
	return sum[:]
}

// restCredentials returns a TURN REST API username and password valid
// until expiry: "<unix-expiry>:user" and base64(HMAC-SHA1(secret, username)).
func restCredentials(secret, user string, expiry int64) (string, string) {
	name := fmt.Sprintf("%d:%s", expiry, user)
	mac := hmac.New(sha1.New, []byte(secret))
	mac.Write([]byte(name))
	return name, base64.StdEncoding.EncodeToString(mac.Sum(nil))
}
