package relay

import (
	"encoding/binary"
	"net/netip"
)

// Just enough STUN wire format (RFC 8489 §5, §14; RFC 8656 §18) for the
// indication fast paths, parsed and built in place without allocating.

const (
	magicCookie        = 0x2112A442
	typeSendIndication = 0x0016
	typeDataIndication = 0x0017
	attrXORPeerAddress = 0x0012
	attrData           = 0x0013
	stunHeader         = 20
	// maxSTUNBody is the longest body a STUN length field can describe: 16
	// bits, a multiple of 4 (RFC 8489 §5).
	maxSTUNBody = 0xFFFC
	// dataIndicationHead is everything before the payload of a Data
	// indication: the header, XOR-PEER-ADDRESS and the DATA attribute header.
	dataIndicationHead4 = stunHeader + 4 + 8 + 4
	dataIndicationHead6 = stunHeader + 4 + 20 + 4
)

// parseSend reads a Send indication: the peer and the payload. ok is false
// for anything else or anything malformed (pion then deals with it).
func parseSend(pkt []byte) (peer netip.AddrPort, data []byte, ok bool) {
	if len(pkt) < stunHeader || binary.BigEndian.Uint16(pkt) != typeSendIndication ||
		binary.BigEndian.Uint32(pkt[4:]) != magicCookie {
		return peer, nil, false
	}
	end := stunHeader + int(binary.BigEndian.Uint16(pkt[2:]))
	if end > len(pkt) {
		return peer, nil, false
	}
	havePeer, haveData := false, false
	for off := stunHeader; off+4 <= end; {
		t := binary.BigEndian.Uint16(pkt[off:])
		l := int(binary.BigEndian.Uint16(pkt[off+2:]))
		v := off + 4
		if v+l > end {
			return peer, nil, false
		}
		switch t {
		case attrXORPeerAddress:
			if peer, havePeer = xorAddr(pkt, pkt[v:v+l]); !havePeer {
				return peer, nil, false
			}
		case attrData:
			data, haveData = pkt[v:v+l], true
		}
		off = v + (l+3)&^3
	}
	return peer, data, havePeer && haveData
}

// xorAddr decodes an XOR-*-ADDRESS value of the message msg.
func xorAddr(msg, v []byte) (netip.AddrPort, bool) {
	if len(v) < 4 {
		return netip.AddrPort{}, false
	}
	port := binary.BigEndian.Uint16(v[2:]) ^ (magicCookie >> 16)
	switch {
	case v[1] == 0x01 && len(v) == 8:
		var a [4]byte
		binary.BigEndian.PutUint32(a[:], binary.BigEndian.Uint32(v[4:])^magicCookie)
		return netip.AddrPortFrom(netip.AddrFrom4(a), port), true
	case v[1] == 0x02 && len(v) == 20:
		var a [16]byte
		for i := range a {
			a[i] = v[4+i] ^ msg[4+i] // cookie then transaction ID, as laid out in the header
		}
		return netip.AddrPortFrom(netip.AddrFrom16(a), port), true
	}
	return netip.AddrPort{}, false
}

// putDataIndication writes the head of a Data indication for peer into b,
// which must be exactly dataIndicationHead4/6 long, for a payload of n
// bytes that follows it (padding included in the returned total length).
func putDataIndication(b []byte, txid [12]byte, peer netip.AddrPort, n int) int {
	pad := (4 - n%4) % 4
	binary.BigEndian.PutUint16(b[0:], typeDataIndication)
	binary.BigEndian.PutUint16(b[2:], uint16(len(b)-stunHeader+n+pad))
	binary.BigEndian.PutUint32(b[4:], magicCookie)
	copy(b[8:20], txid[:])
	a := b[stunHeader:]
	binary.BigEndian.PutUint16(a[0:], attrXORPeerAddress)
	binary.BigEndian.PutUint16(a[6:], peer.Port()^(magicCookie>>16))
	a[4] = 0
	if ip := peer.Addr(); ip.Is4() {
		binary.BigEndian.PutUint16(a[2:], 8)
		a[5] = 0x01
		v4 := ip.As4()
		binary.BigEndian.PutUint32(a[8:], binary.BigEndian.Uint32(v4[:])^magicCookie)
		a = a[12:]
	} else {
		binary.BigEndian.PutUint16(a[2:], 20)
		a[5] = 0x02
		v6 := ip.As16()
		for i := range v6 {
			a[8+i] = v6[i] ^ b[4+i]
		}
		a = a[24:]
	}
	binary.BigEndian.PutUint16(a[0:], attrData)
	binary.BigEndian.PutUint16(a[2:], uint16(n))
	return len(b) + n + pad
}
