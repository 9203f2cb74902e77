package turn

import (
	"github.com/pion/stun/v4"

	"github.com/turnd/turnd/internal/bindings"
	"github.com/turnd/turnd/internal/wire"
)

// ADDITIONAL-ADDRESS-FAMILY and ADDRESS-ERROR-CODE (RFC 8656 §18.11,
// §18.12), and the numbering coturn 4.6.1 and its turnutils_uclient -Z
// still use: an answer names ADDRESS-ERROR-CODE in the request's numbering.
const (
	attrAdditionalAddressFamily    stun.AttrType = 0x8000
	attrAddressErrorCode           stun.AttrType = 0x8001
	attrAdditionalAddressFamilyOld stun.AttrType = 0x8032
	attrAddressErrorCodeOld        stun.AttrType = 0x8033
)

// familyAsk is what an Allocate asks of the address families.
type familyAsk struct {
	want bindings.Families // what the relay is asked for
	// lacking are families asked for in a dual allocation that turnd has
	// no relay address of: the success says so in ADDRESS-ERROR-CODE 440.
	lacking bindings.Families
	// errorType is ADDRESS-ERROR-CODE's type in the request's numbering; 0
	// without ADDITIONAL-ADDRESS-FAMILY.
	errorType stun.AttrType
	// named is set when the request carries REQUESTED- or
	// ADDITIONAL-ADDRESS-FAMILY, which a RESERVATION-TOKEN excludes.
	named bool
}

// askedFamilies reads an Allocate's family attributes against the families
// turnd serves, or the error code refusing them (RFC 8656 §7.2 and
// docs/control-plane.md section 3):
//
//   - "If the server does not support the address family requested by the
//     client in REQUESTED-ADDRESS-FAMILY [...] it MUST generate an Allocate
//     error response [with] 440 (Address Family not Supported)"; a value
//     of the wrong size is malformed, 400;
//   - "If the REQUESTED-ADDRESS-FAMILY attribute is absent and the server
//     supports the IPv4 address family, the server MUST allocate an IPv4
//     relayed transport address": IPv4 by default, and the IPv6 one where
//     turnd has no IPv4 relay address (an IPv6-only host must still serve
//     Chromium, which does not ask);
//   - both REQUESTED- and ADDITIONAL-ADDRESS-FAMILY: 400; an
//     ADDITIONAL-ADDRESS-FAMILY of IPv4 (or anything but IPv6): 400; a
//     dual allocation of which turnd lacks one family is served with the
//     other and ADDRESS-ERROR-CODE 440, and refused 440 only when it lacks
//     both.
func askedFamilies(m *stun.Message, served bindings.Families) (familyAsk, stun.ErrorCode) {
	requested, hasRequested := attr(m, stun.AttrRequestedAddressFamily)
	additional, hasAdditional := attr(m, attrAdditionalAddressFamily)
	errType := attrAddressErrorCode
	if !hasAdditional {
		additional, hasAdditional = attr(m, attrAdditionalAddressFamilyOld)
		errType = attrAddressErrorCodeOld
	}
	switch {
	case hasRequested && hasAdditional:
		return familyAsk{}, stun.CodeBadRequest
	case hasAdditional:
		if len(additional) != 4 || additional[0] != wire.FamilyIPv6 {
			return familyAsk{}, stun.CodeBadRequest
		}
		ask := familyAsk{want: bindings.Both & served, lacking: bindings.Both &^ served, errorType: errType, named: true}
		if ask.want == 0 {
			return familyAsk{}, stun.CodeAddrFamilyNotSupported
		}
		return ask, 0
	case hasRequested:
		if len(requested) != 4 {
			return familyAsk{}, stun.CodeBadRequest
		}
		var f bindings.Families
		switch requested[0] {
		case wire.FamilyIPv4:
			f = bindings.V4
		case wire.FamilyIPv6:
			f = bindings.V6
		}
		if !served.Has(f) {
			return familyAsk{}, stun.CodeAddrFamilyNotSupported
		}
		return familyAsk{want: f, named: true}, 0
	case served.Has(bindings.V4):
		return familyAsk{want: bindings.V4}, 0
	case served.Has(bindings.V6):
		return familyAsk{want: bindings.V6}, 0
	}
	return familyAsk{}, stun.CodeAddrFamilyNotSupported
}

// addressError is ADDRESS-ERROR-CODE (RFC 8656 §18.12) for one family of a
// dual allocation: the family, the code and its reason phrase.
type addressError struct {
	typ    stun.AttrType
	family bindings.Families
	code   stun.ErrorCode
}

// AddTo adds the attribute to m.
func (a addressError) AddTo(m *stun.Message) error {
	var tmp stun.Message
	if err := a.code.AddTo(&tmp); err != nil { // the ERROR-CODE value: class, number, phrase
		return err
	}
	ec, _ := tmp.Get(stun.AttrErrorCode)
	v := make([]byte, len(ec))
	copy(v, ec)
	v[0] = wire.FamilyIPv4
	if a.family == bindings.V6 {
		v[0] = wire.FamilyIPv6
	}
	m.Add(a.typ, v)
	return nil
}

// attr is the value of m's first attribute of type t, and whether there is one.
func attr(m *stun.Message, t stun.AttrType) ([]byte, bool) {
	v, err := m.Get(t)
	return v, err == nil
}
