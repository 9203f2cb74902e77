package turn

import (
	"errors"
	"net/netip"

	"github.com/pion/stun/v4"

	"github.com/turnd/turnd/internal/bindings"
	"github.com/turnd/turnd/pkg/allocation"
)

// createPermission serves a CreatePermission (RFC 8656 §10.2), all or
// none:
//
//   - "The CreatePermission request MUST contain at least one
//     XOR-PEER-ADDRESS attribute [...]. If an XOR-PEER-ADDRESS attribute
//     is missing or malformed, the server MUST reply with a 400";
//   - "If an XOR-PEER-ADDRESS attribute contains an address of an address
//     family that is not the same as that of a relayed transport address
//     for the allocation, the server MUST generate an error response with
//     the 443 (Peer Address Family Mismatch) response code";
//   - "The server MAY impose restrictions on the IP address allowed in the
//     XOR-PEER-ADDRESS attribute; if a value is not allowed, the server
//     rejects the request with a 403 (Forbidden) error";
//   - "If the message is valid and the server is capable of carrying out
//     the request, then the server installs or refreshes a permission for
//     the IP address contained in each XOR-PEER-ADDRESS attribute"; past
//     limits.permissions_per_allocation, 508 (Insufficient Capacity).
func (h *Handler) createPermission(r *Request) {
	peers, ok := peerAddresses(r.Msg)
	if !ok {
		h.fail(r, stun.CodeBadRequest)
		return
	}
	have := r.Alloc.Families()
	ips := make([]netip.Addr, len(peers))
	for i, p := range peers {
		if !have.Has(bindings.Of(p.Addr())) {
			h.fail(r, stun.CodePeerAddrFamilyMismatch)
			return
		}
		ips[i] = p.Addr()
	}
	for _, p := range peers {
		if !h.peerAllowed(r, p) {
			return
		}
	}
	h.bound(r, h.table.Permit(r.Alloc, ips, r.Now, r.policy.PermissionsPerAllocation))
}

// peerAllowed applies Policy.Peer to a peer, answering 403 when it refuses.
func (h *Handler) peerAllowed(r *Request, peer netip.AddrPort) bool {
	if r.policy.Peer == nil || r.policy.Peer(peer) {
		return true
	}
	h.events.Refused(r.Msg.Type.Method.String(), RefusedPeerDenied, r.User, r.From.Tuple.Client)
	h.fail(r, stun.CodeForbidden)
	return false
}

// bound answers a CreatePermission or ChannelBind by what the table made of it.
func (h *Handler) bound(r *Request, err error) {
	switch {
	case err == nil:
		h.succeed(r)
	case errors.Is(err, allocation.ErrFamilyMismatch):
		h.fail(r, stun.CodePeerAddrFamilyMismatch) // a family deleted since the check
	case errors.Is(err, allocation.ErrPermissionQuota), errors.Is(err, allocation.ErrChannelQuota):
		h.events.Refused(r.Msg.Type.Method.String(), RefusedCapacity, r.User, r.From.Tuple.Client)
		h.fail(r, stun.CodeInsufficientCapacity)
	case errors.Is(err, allocation.ErrChannelNumberTaken), errors.Is(err, allocation.ErrChannelPeerTaken):
		h.fail(r, stun.CodeBadRequest)
	default: // ended since it was looked up
		h.fail(r, stun.CodeAllocMismatch)
	}
}
