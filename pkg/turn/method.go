package turn

import (
	"github.com/pion/stun/v4"
)

// method hands an authenticated request to its method's handler.
func (h *Handler) method(r *Request) {
	switch r.Msg.Type.Method {
	case stun.MethodRefresh, stun.MethodCreatePermission, stun.MethodChannelBind, stun.MethodConnect:
		// RFC 8656 §7.3, §9.2, §11.2 (RFC 6062 §5.2): no allocation on the
		// 5-tuple is 437. The allocation table comes next; until then there
		// is none.
		h.fail(r, stun.CodeAllocMismatch)
	default:
		h.fail(r, stun.CodeServerError)
	}
}

// admitting reports whether the table admits new allocations; until the
// table comes, always.
func (h *Handler) admitting() bool { return true }
