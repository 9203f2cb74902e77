package turn

import (
	"github.com/pion/stun/v4"
)

// REQUESTED-TRANSPORT's values turnd relays (RFC 8656 §18.10, RFC 6062 §6.2).
const (
	protoUDP = 17
	protoTCP = 6
)

// allocateAsk is what an Allocate's attributes ask for, once checked.
type allocateAsk struct {
	tcp          bool   // an RFC 6062 relay
	dontFragment bool   // DONT-FRAGMENT
	token        []byte // RESERVATION-TOKEN, nil: none
	even         bool   // EVEN-PORT
	reserve      bool   // EVEN-PORT with R=1: hold the next port for a token
}

// allocateAttrs checks an Allocate's transport, DONT-FRAGMENT,
// RESERVATION-TOKEN and EVEN-PORT attributes, in the order of RFC 8656
// §7.2 (RFC 5766's step numbers), over a stream connection or not. The
// steps that need the table (the token's port, the reservation cap) are
// the caller's.
func allocateAttrs(m *stun.Message, p *Policy, overStream bool) (allocateAsk, stun.ErrorCode) {
	var ask allocateAsk
	// Step 3: "If the REQUESTED-TRANSPORT attribute is not included or is
	// malformed, the server rejects the request with a 400 (Bad Request)
	// error. Otherwise, if the attribute is included but specifies a
	// protocol that is not supported by the server, the server rejects
	// the request with a 442 (Unsupported Transport Protocol) error."
	transport, ok := attr(m, stun.AttrRequestedTransport)
	if !ok || len(transport) != 4 {
		return ask, stun.CodeBadRequest
	}
	switch transport[0] {
	case protoUDP:
	case protoTCP:
		ask.tcp = true
		if !p.TCPAllocations {
			return ask, stun.CodeUnsupportedTransProto // relay.tcp_allocations is off
		}
	default:
		return ask, stun.CodeUnsupportedTransProto
	}
	_, ask.dontFragment = attr(m, stun.AttrDontFragment)
	ask.token, _ = attr(m, stun.AttrReservationToken)
	evenPort, hasEven := attr(m, stun.AttrEvenPort)
	// RFC 6062 §5.1: "If the client connection transport is not TCP or
	// TLS, the server MUST reject the request with a 400 (Bad Request)
	// error. If the request contains the DONT-FRAGMENT, EVEN-PORT, or
	// RESERVATION-TOKEN attribute, the server MUST reject the request
	// with a 400 (Bad Request) error."
	if ask.tcp && (!overStream || ask.dontFragment || hasEven || ask.token != nil) {
		return ask, stun.CodeBadRequest
	}
	// Step 4: DONT-FRAGMENT is supported (the relay socket sets DF), so it
	// is never treated as an unknown attribute.
	//
	// Step 5, first half: "If yes, and the request also contains an
	// EVEN-PORT attribute, then the server rejects the request with a 400
	// (Bad Request) error"; and so with REQUESTED- or
	// ADDITIONAL-ADDRESS-FAMILY (RFC 8656 §7.2): the token names its port,
	// and so its family. A token is 8 bytes (§18.9).
	if ask.token != nil {
		_, requested := attr(m, stun.AttrRequestedAddressFamily)
		_, additional := attr(m, attrAdditionalAddressFamily)
		_, additionalOld := attr(m, attrAdditionalAddressFamilyOld)
		if hasEven || requested || additional || additionalOld || len(ask.token) != 8 {
			return ask, stun.CodeBadRequest
		}
	}
	// Step 6: EVEN-PORT asks for an even port; with its R bit, for the
	// next port to be held for a later Allocate too.
	if hasEven {
		if len(evenPort) < 1 {
			return ask, stun.CodeBadRequest
		}
		ask.even, ask.reserve = true, evenPort[0]&0x80 != 0
	}
	return ask, 0
}
