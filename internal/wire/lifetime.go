package wire

import "encoding/binary"

// Lifetime reads the first whole LIFETIME attribute (RFC 8656 §18.2) of the
// STUN message msg, in seconds; false if it has none.
func Lifetime(msg []byte) (uint32, bool) {
	a := Walk(msg)
	for a.Next() {
		if a.Type() == AttrLifetime && a.Len() == 4 && !a.Truncated() {
			return binary.BigEndian.Uint32(a.Value()), true
		}
	}
	return 0, false
}
