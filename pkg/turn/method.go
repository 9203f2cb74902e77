package turn

import (
	"github.com/pion/stun/v4"
)

// method hands an authenticated request to its method's handler, after
// RFC 8656 §5's checks on the 5-tuple's allocation: "If the request is
// received on a 5-tuple for which no allocation exists, the server MUST
// reject [Refresh, CreatePermission, ChannelBind] with a 437 (Allocation
// Mismatch) error", and the allocation "MUST be authenticated using the
// same long-term credential that was used to create the allocation": 441
// (Wrong Credentials) otherwise.
func (h *Handler) method(r *Request) {
	r.Alloc, _ = h.table.Get(r.From.Tuple)
	method := r.Msg.Type.Method
	switch method {
	case stun.MethodAllocate:
		h.allocate(r)
		return
	case methodConnectionBind:
		h.connectionBind(r)
		return
	case stun.MethodConnect:
		// RFC 6062 §5.2 belongs to TCP and TLS connections: over UDP it is
		// 400 whether or not the 5-tuple holds an allocation.
		if r.From.Stream == nil {
			h.fail(r, stun.CodeBadRequest)
			return
		}
	}
	switch {
	case r.Alloc == nil:
		h.fail(r, stun.CodeAllocMismatch)
		return
	case r.Alloc.User != r.User:
		h.fail(r, stun.CodeWrongCredentials)
		return
	}
	switch method {
	case stun.MethodRefresh:
		h.refresh(r)
	case stun.MethodCreatePermission:
		h.createPermission(r)
	case stun.MethodChannelBind:
		h.channelBind(r)
	case stun.MethodConnect:
		h.connect(r)
	}
}

// methodConnectionBind is RFC 6062's ConnectionBind, which pion/stun does
// not name (RFC 6062 §6.1).
const methodConnectionBind stun.Method = 0x000B

// admitting reports whether the table admits new allocations.
func (h *Handler) admitting() bool { return h.table.Admitting() }
