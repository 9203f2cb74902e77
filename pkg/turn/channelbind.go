package turn

import (
	"encoding/binary"

	"github.com/pion/stun/v4"

	"github.com/turnd/turnd/internal/bindings"
)

// channelBind serves a ChannelBind (RFC 8656 §12.2):
//
//   - "The request contains both a CHANNEL-NUMBER and an XOR-PEER-ADDRESS
//     attribute" and "The channel number is in the range 0x4000 through
//     0x4FFF (inclusive)": turnd keeps RFC 5766's 0x4000-0x7FFF, which
//     WebRTC's TURN client uses; outside it, or without a valid peer (port
//     0 is none), 400;
//   - a peer of a family the allocation has no relayed address of: 443;
//     a peer the policy refuses: 403;
//   - "The channel number is not currently bound to a different transport
//     address (same transport address is OK)" and "The transport address
//     is not currently bound to a different channel number": else 400;
//   - "If the server is unable to fulfill the request, the server replies
//     with a 508 (Insufficient Capacity)": past the channel or permission
//     cap;
//   - success "creates or refreshes the channel binding [...] and also
//     installs or refreshes a permission" in the same step.
func (h *Handler) channelBind(r *Request) {
	v, ok := attr(r.Msg, stun.AttrChannelNumber)
	if !ok || len(v) != 4 || !channelUsable(binary.BigEndian.Uint16(v)) {
		h.fail(r, stun.CodeBadRequest)
		return
	}
	number := binary.BigEndian.Uint16(v)
	peer, ok := peerAddress(r.Msg)
	if !ok || peer.Port() == 0 {
		h.fail(r, stun.CodeBadRequest)
		return
	}
	if !r.Alloc.Families().Has(bindings.Of(peer.Addr())) {
		h.fail(r, stun.CodePeerAddrFamilyMismatch)
		return
	}
	if !h.peerAllowed(r, peer) {
		return
	}
	p := r.policy
	err := h.table.BindChannel(r.Alloc, number, peer, r.Now, p.ChannelsPerAllocation, p.PermissionsPerAllocation)
	if err == nil {
		h.events.ChannelBound(r.Alloc, number, peer)
	}
	h.bound(r, err)
}

// channelUsable reports whether a ChannelBind may use number. Below 0x4000
// a ChannelData header would read as a STUN message type; above 0x7FFF as
// neither.
func channelUsable(number uint16) bool { return number >= 0x4000 && number <= 0x7FFF }
