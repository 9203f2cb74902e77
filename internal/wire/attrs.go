package wire

import "encoding/binary"

// Attrs walks the attributes of a STUN message in place, without decoding
// them, up to the end its length field gives or the end of the bytes,
// whichever comes first:
//
//	a := wire.Walk(msg)
//	for a.Next() {
//		switch a.Type() { ... }
//	}
//
// (Declared outside the for statement: a per-iteration copy of the cursor
// would cost more than the walk.)
//
// An attribute whose header fits but whose value runs past that end is
// still visited, with Truncated true, and is always the last one: callers
// differ on what such a message means, so each decides.
type Attrs struct {
	// Four words at most, so the compiler keeps a cursor in registers.
	msg     []byte // the message up to the end of the walk (at most 20+0xFFFF bytes)
	off, at int32  // the next attribute's header; the current one's
}

// Walk starts a walk of msg's attributes; a msg shorter than a STUN header
// has none.
func Walk(msg []byte) Attrs {
	if len(msg) < HeaderSize {
		return Attrs{}
	}
	return Attrs{msg: msg[:min(len(msg), HeaderSize+BodyLength(msg))], off: HeaderSize}
}

// Next moves to the next attribute and reports whether there was one.
func (a *Attrs) Next() bool {
	if int(a.off)+4 > len(a.msg) {
		return false
	}
	a.at = a.off
	a.off += 4 + int32(a.Len()+3)&^3
	return true
}

// Type is the current attribute's type.
func (a *Attrs) Type() uint16 { return binary.BigEndian.Uint16(a.msg[a.at:]) }

// Len is the current attribute's declared value length, padding excluded.
func (a *Attrs) Len() int { return int(binary.BigEndian.Uint16(a.msg[a.at+2:])) }

// Offset is where the current attribute's header starts in the message:
// what FINGERPRINT and MESSAGE-INTEGRITY cover ends there.
func (a *Attrs) Offset() int { return int(a.at) }

// Truncated reports whether the current attribute's value runs past the
// end of the walk.
func (a *Attrs) Truncated() bool { return int(a.at)+4+a.Len() > len(a.msg) }

// Value is the current attribute's value, padding excluded; nil if
// Truncated.
func (a *Attrs) Value() []byte {
	if a.Truncated() {
		return nil
	}
	return a.msg[int(a.at)+4 : int(a.at)+4+a.Len()]
}

// BodyLength is the length field of the STUN header of msg, which must be
// at least four bytes long.
func BodyLength(msg []byte) int { return int(binary.BigEndian.Uint16(msg[2:4])) }
