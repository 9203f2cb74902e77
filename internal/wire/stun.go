package wire

import "encoding/binary"

// HeaderSize is the length of a STUN header (RFC 8489 §5).
const HeaderSize = 20

// MagicCookie is the fixed header field of RFC 8489 STUN (§5).
const MagicCookie = 0x2112A442

// MaxBody is the longest body a STUN length field can describe: 16 bits, a
// multiple of 4 (RFC 8489 §5).
const MaxBody = 0xFFFC

// STUN message types turnd reads or writes (RFC 8489 §5, RFC 8656 §17,
// RFC 6062 §6.1).
const (
	TypeBindingRequest          = 0x0001
	TypeAllocateRequest         = 0x0003
	TypeRefreshRequest          = 0x0004
	TypeCreatePermissionRequest = 0x0008
	TypeChannelBindRequest      = 0x0009
	TypeConnectRequest          = 0x000A
	TypeConnectionBindRequest   = 0x000B
	TypeSendIndication          = 0x0016
	TypeDataIndication          = 0x0017
	TypeAllocateSuccess         = 0x0103
	TypeRefreshSuccess          = 0x0104
	TypeConnectionBindSuccess   = 0x010B
	TypeAllocateError           = 0x0113
)

// The class bits of a STUN message type (RFC 8489 §5).
const (
	ClassMask       = 0x0110
	ClassRequest    = 0x0000
	ClassIndication = 0x0010
	ClassSuccess    = 0x0100
	ClassError      = 0x0110
)

// STUN attributes turnd reads or writes (RFC 8489 §14, RFC 8656 §18).
const (
	AttrMessageIntegrity       = 0x0008
	AttrLifetime               = 0x000D
	AttrXORPeerAddress         = 0x0012
	AttrData                   = 0x0013
	AttrMessageIntegritySHA256 = 0x001C
	AttrFingerprint            = 0x8028
)

// Address family values of XOR-*-ADDRESS and REQUESTED-ADDRESS-FAMILY
// (RFC 8489 §14.2, RFC 8656 §18.1).
const (
	FamilyIPv4 = 0x01
	FamilyIPv6 = 0x02
)

// IsSTUN reports whether b can be a STUN message: a whole header whose
// first two bits are 0 (RFC 8489 §5).
func IsSTUN(b []byte) bool { return len(b) >= HeaderSize && b[0]&0xC0 == 0 }

// Type is the message type of the STUN message b, which must be at least
// two bytes long.
func Type(b []byte) uint16 { return binary.BigEndian.Uint16(b) }

// IsSendIndication reports whether b is a STUN message of type Send
// indication (RFC 8656 §11.2); its body is not looked at.
func IsSendIndication(b []byte) bool {
	return len(b) >= HeaderSize && Type(b) == TypeSendIndication
}
