package wire

import (
	"encoding/binary"
	"hash/crc32"
)

// fingerprintXOR is what the CRC-32 of a FINGERPRINT is XORed with (RFC 8489 §14.7).
const fingerprintXOR = 0x5354554e

// FingerprintOK reports whether the current attribute of a, a FINGERPRINT
// of msg, is whole and matches: the CRC-32 of the message up to it, XOR
// 0x5354554e (RFC 8489 §14.7).
func FingerprintOK(msg []byte, a *Attrs) bool {
	if a.Len() != 4 || a.Truncated() {
		return false
	}
	return binary.BigEndian.Uint32(a.Value()) == crc32.ChecksumIEEE(msg[:a.Offset()])^fingerprintXOR
}
