package turn

import (
	"github.com/pion/stun/v4"
)

// unknownRequired lists m's comprehension-required attributes turnd does
// not understand (RFC 8489 §6.3.1.1: types 0x0000-0x7FFF), nil if none.
func unknownRequired(m *stun.Message) []stun.AttrType {
	var out []stun.AttrType
	for _, a := range m.Attributes {
		if a.Type.Required() && !understood(a.Type) {
			out = append(out, a.Type)
		}
	}
	return out
}

// understood reports whether turnd knows the comprehension-required
// attribute t: the types pion/stun names, as pion's server took them (so a
// client sees what it saw), without stun.AttrType.Known's map per call.
func understood(t stun.AttrType) bool {
	switch t {
	case stun.AttrMappedAddress, stun.AttrUsername, stun.AttrErrorCode, stun.AttrMessageIntegrity,
		stun.AttrUnknownAttributes, stun.AttrRealm, stun.AttrNonce, stun.AttrXORMappedAddress,
		stun.AttrPriority, stun.AttrUseCandidate, stun.AttrChannelNumber, stun.AttrLifetime,
		stun.AttrXORPeerAddress, stun.AttrData, stun.AttrXORRelayedAddress, stun.AttrEvenPort,
		stun.AttrRequestedTransport, stun.AttrDontFragment, stun.AttrReservationToken,
		stun.AttrConnectionID, stun.AttrRequestedAddressFamily, stun.AttrMessageIntegritySHA256,
		stun.AttrPasswordAlgorithm, stun.AttrUserhash:
		return true
	}
	return false
}
