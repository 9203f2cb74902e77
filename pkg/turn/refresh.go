package turn

import (
	"errors"

	"github.com/pion/stun/v4"

	"github.com/turnd/turnd/internal/bindings"
	"github.com/turnd/turnd/internal/wire"
	"github.com/turnd/turnd/pkg/allocation"
)

// refresh serves a Refresh on the request's allocation (RFC 8656 §8.2):
//
//   - "If the server receives a Refresh Request with a
//     REQUESTED-ADDRESS-FAMILY attribute and the attribute value does not
//     match the address family of the allocation, the server MUST reply
//     with a 443 (Peer Address Family Mismatch) Refresh error response";
//     with one it has, only that family of a dual allocation is refreshed
//     or deleted, and without, every family;
//   - "If the requested lifetime is zero, then the server MUST delete the
//     allocation [...] otherwise, the server computes a new lifetime" as
//     for an Allocate (lifetime.go), and "the server then [...] includes
//     [...] a LIFETIME attribute containing the current value of the
//     time-to-expiry timer".
func (h *Handler) refresh(r *Request) {
	var f bindings.Families
	if v, ok := attr(r.Msg, stun.AttrRequestedAddressFamily); ok {
		switch {
		case len(v) != 4:
			h.fail(r, stun.CodeBadRequest)
			return
		case v[0] == wire.FamilyIPv4:
			f = bindings.V4
		case v[0] == wire.FamilyIPv6:
			f = bindings.V6
		default:
			h.fail(r, stun.CodePeerAddrFamilyMismatch)
			return
		}
	}
	asked, ok := requestedLifetime(r.Msg)
	if !ok {
		asked = r.policy.DefaultLifetime // §8.2: no LIFETIME is a refresh to the default
	}
	granted, err := h.table.Refresh(r.Alloc, f, grant(asked, true, r.policy), r.Now)
	switch {
	case errors.Is(err, allocation.ErrFamilyMismatch):
		h.fail(r, stun.CodePeerAddrFamilyMismatch)
	case err != nil: // ended since it was looked up
		h.fail(r, stun.CodeAllocMismatch)
	default:
		h.succeed(r, lifetimeAttr(granted))
	}
}
