package wire

import "encoding/binary"

// ChannelDataHeaderSize is the length of a ChannelData header: channel
// number and length (RFC 8656 §12.4).
const ChannelDataHeaderSize = 4

// IsChannelData reports whether b starts with a ChannelData header: a whole
// one, whose first two bits are 01 (channel numbers 0x4000-0x7FFF).
func IsChannelData(b []byte) bool { return len(b) >= ChannelDataHeaderSize && b[0]&0xC0 == 0x40 }

// ParseChannelData reads a ChannelData message: its channel number and its
// payload, without the padding a stream adds. ok is false for anything else
// and for a length running past b.
func ParseChannelData(b []byte) (number uint16, payload []byte, ok bool) {
	if !IsChannelData(b) {
		return 0, nil, false
	}
	n := int(binary.BigEndian.Uint16(b[2:4]))
	if ChannelDataHeaderSize+n > len(b) {
		return 0, nil, false
	}
	return binary.BigEndian.Uint16(b), b[ChannelDataHeaderSize : ChannelDataHeaderSize+n], true
}

// PutChannelDataHeader writes the header of a ChannelData message of n
// payload bytes on channel number into h, which must be four bytes long.
func PutChannelDataHeader(h []byte, number uint16, n int) {
	binary.BigEndian.PutUint16(h[0:], number)
	binary.BigEndian.PutUint16(h[2:], uint16(n))
}

// FrameSize is the size of the frame at the front of a TCP or TLS stream b
// (at least four bytes): a STUN message, or ChannelData padded to four
// bytes as streams carry it (RFC 8656 §12.5); false if b starts with
// neither.
func FrameSize(b []byte) (int, bool) {
	switch b[0] & 0xC0 {
	case 0: // STUN: 20-byte header, 16-bit length at offset 2
		return HeaderSize + BodyLength(b), true
	case 0x40: // ChannelData: its 16-bit length is at offset 2 too
		return ChannelDataHeaderSize + (int(binary.BigEndian.Uint16(b[2:4]))+3)&^3, true
	}
	return 0, false
}

// IsData reports whether a frame is one the relay's fast path may take:
// ChannelData or a Send indication.
func IsData(frame []byte) bool { return IsChannelData(frame) || IsSendIndication(frame) }
