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
//     XOR-PEER-ADDRESS attribute and MAY contain multiple such
//     attributes. If no such attribute exists, or if any of these
//     attributes are invalid, then a 400 (Bad Request) error is returned";
//   - a peer of a family the allocation has no relayed address of is 443
//     (Peer Address Family Mismatch);
//   - "The server MAY impose restrictions on the IP address allowed in the
//     XOR-PEER-ADDRESS attribute; if a value is not allowed, the server
//     rejects the request with a 403 (Forbidden) error";
//   - "If the request is valid, but the server is unable to fulfill the
//     request due to some capacity limit or similar, then a 508
//     (Insufficient Capacity) error is returned": past
//     limits.permissions_per_allocation;
//   - otherwise the server installs or refreshes a permission for the IP
//     address of each XOR-PEER-ADDRESS, in one step under the table's lock.
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
