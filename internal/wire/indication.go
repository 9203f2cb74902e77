package wire

import (
	"encoding/binary"
	"net/netip"
)

// DataIndicationHead4 and DataIndicationHead6 are everything before the
// payload of a Data indication from an IPv4 or IPv6 peer: the header,
// XOR-PEER-ADDRESS and the DATA attribute header.
const (
	DataIndicationHead4 = HeaderSize + 4 + 8 + 4
	DataIndicationHead6 = HeaderSize + 4 + 20 + 4
)

// ParseSend reads a Send indication (RFC 8656 §11.2): the peer and the
// payload. ok is false for anything else or anything malformed: a length
// past the bytes, a truncated attribute, a bad XOR-PEER-ADDRESS, no
// XOR-PEER-ADDRESS or no DATA (the Send handler then deals with it), or a
// FINGERPRINT that does not match (RFC 8489 §14.7: not STUN; the handlers
// drop it). The
// last of a repeated attribute wins.
//
// Hot path: one call per Send indication; no allocation.
func ParseSend(pkt []byte) (peer netip.AddrPort, data []byte, ok bool) {
	if !IsSendIndication(pkt) || binary.BigEndian.Uint32(pkt[4:]) != MagicCookie ||
		HeaderSize+BodyLength(pkt) > len(pkt) {
		return peer, nil, false
	}
	havePeer, haveData := false, false
	a := Walk(pkt)
	for a.Next() {
		if a.Truncated() {
			return peer, nil, false
		}
		switch a.Type() {
		case AttrXORPeerAddress:
			if peer, havePeer = XORAddr(pkt, a.Value()); !havePeer {
				return peer, nil, false
			}
		case AttrData:
			data, haveData = a.Value(), true
		case AttrFingerprint:
			if !FingerprintOK(pkt, &a) {
				return peer, nil, false
			}
		}
	}
	return peer, data, havePeer && haveData
}

// XORAddr decodes the value v of an XOR-*-ADDRESS attribute of the message
// msg (RFC 8489 §14.2); false if it is malformed.
func XORAddr(msg, v []byte) (netip.AddrPort, bool) {
	if len(v) < 4 {
		return netip.AddrPort{}, false
	}
	port := binary.BigEndian.Uint16(v[2:]) ^ (MagicCookie >> 16)
	switch {
	case v[1] == FamilyIPv4 && len(v) == 8:
		var a [4]byte
		binary.BigEndian.PutUint32(a[:], binary.BigEndian.Uint32(v[4:])^MagicCookie)
		return netip.AddrPortFrom(netip.AddrFrom4(a), port), true
	case v[1] == FamilyIPv6 && len(v) == 20:
		var a [16]byte
		for i := range a {
			a[i] = v[4+i] ^ msg[4+i] // cookie then transaction ID, as laid out in the header
		}
		return netip.AddrPortFrom(netip.AddrFrom16(a), port), true
	}
	return netip.AddrPort{}, false
}

// PutDataIndication writes the head of a Data indication (RFC 8656 §11.4)
// for peer into b, which must be exactly DataIndicationHead4 or
// DataIndicationHead6 long (as peer is IPv4 or not), for a payload of n
// bytes that follows it; it returns the message's total length, padding
// included. The caller writes the payload and zeroes the padding.
//
// Hot path: one call per Data indication; no allocation.
func PutDataIndication(b []byte, txid [12]byte, peer netip.AddrPort, n int) int {
	pad := (4 - n%4) % 4
	binary.BigEndian.PutUint16(b[0:], TypeDataIndication)
	binary.BigEndian.PutUint16(b[2:], uint16(len(b)-HeaderSize+n+pad))
	binary.BigEndian.PutUint32(b[4:], MagicCookie)
	copy(b[8:20], txid[:])
	a := b[HeaderSize:]
	binary.BigEndian.PutUint16(a[0:], AttrXORPeerAddress)
	binary.BigEndian.PutUint16(a[6:], peer.Port()^(MagicCookie>>16))
	a[4] = 0
	if ip := peer.Addr(); ip.Is4() {
		binary.BigEndian.PutUint16(a[2:], 8)
		a[5] = FamilyIPv4
		v4 := ip.As4()
		binary.BigEndian.PutUint32(a[8:], binary.BigEndian.Uint32(v4[:])^MagicCookie)
		a = a[12:]
	} else {
		binary.BigEndian.PutUint16(a[2:], 20)
		a[5] = FamilyIPv6
		v6 := ip.As16()
		for i := range v6 {
			a[8+i] = v6[i] ^ b[4+i]
		}
		a = a[24:]
	}
	binary.BigEndian.PutUint16(a[0:], AttrData)
	binary.BigEndian.PutUint16(a[2:], uint16(n))
	return len(b) + n + pad
}
