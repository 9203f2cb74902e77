package gate

import (
	"net"

	"github.com/pion/stun/v4"

	"github.com/turnd/turnd/internal/wire"
)

// familyServed reports whether an Allocate's REQUESTED-ADDRESS-FAMILY, if
// any, names a family turnd has a relay address for. A malformed or unknown
// value is left to pion, which answers 400 or 440 itself.
func familyServed(p *Policy, msg *stun.Message) bool {
	v, err := msg.Get(stun.AttrRequestedAddressFamily)
	if err != nil || len(v) != 4 || p.RelayFamily == nil {
		return true
	}
	switch v[0] {
	case wire.FamilyIPv4:
		return p.RelayFamily(false)
	case wire.FamilyIPv6:
		return p.RelayFamily(true)
	}
	return true
}

// channelUsable reports whether a ChannelBind may use number. RFC 8656 §12.2
// allows 0x4000–0x4FFF; turnd keeps RFC 5766's 0x4000–0x7FFF, which WebRTC's
// TURN client uses. Below 0x4000 a ChannelData header would read as a STUN
// message type, so such a channel could never carry data.
func channelUsable(number uint16) bool { return number >= 0x4000 && number <= 0x7FFF }

// wrongUser reports whether msg acts on an allocation that another user
// created: RFC 8656 §5 wants 441 Wrong Credentials, where pion stays silent.
func wrongUser(p *Policy, msg *stun.Message, userID string, src, local net.Addr) bool {
	switch msg.Type.Method {
	case stun.MethodRefresh, stun.MethodCreatePermission, stun.MethodChannelBind, stun.MethodConnect:
	default:
		return false
	}
	if p.AllocationUser == nil {
		return false
	}
	owner, ok := p.AllocationUser(src, local)
	return ok && owner != userID
}
