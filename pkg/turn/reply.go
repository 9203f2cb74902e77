package turn

import (
	"github.com/pion/stun/v4"
)

// fail answers r with the error code, its reason phrase (RFC 8489 §14.8,
// RFC 8656 §19, RFC 6062 §6.3: pion/stun's table has every code turnd
// sends) and the extra attributes.
func (h *Handler) fail(r *Request, code stun.ErrorCode, extra ...stun.Setter) {
	h.answer(r, stun.ClassErrorResponse, append([]stun.Setter{code}, extra...)...)
}

// succeed answers r with a success response carrying attrs.
func (h *Handler) succeed(r *Request, attrs ...stun.Setter) {
	h.answer(r, stun.ClassSuccessResponse, attrs...)
}

// answer builds r's one answer of class and writes it to the client: the
// attributes in order, then MESSAGE-INTEGRITY with the key that verified
// the request (RFC 8489 §9.2.4: a response to an authenticated request is
// signed), then FINGERPRINT when the request carried one (§7.3: the
// answer to a bare request stays small).
func (h *Handler) answer(r *Request, class stun.MessageClass, attrs ...stun.Setter) {
	m := stun.New()
	m.TransactionID = r.Msg.TransactionID
	m.SetType(stun.NewType(r.Msg.Type.Method, class))
	m.WriteHeader()
	for _, a := range attrs {
		if err := a.AddTo(m); err != nil {
			return // only a setter of ours can fail, on a value it was never given
		}
	}
	if r.Key != nil {
		_ = stun.MessageIntegrity(r.Key).AddTo(m) // cannot fail: the message has no FINGERPRINT yet
	}
	if r.fingerprint {
		_ = stun.Fingerprint.AddTo(m)
	}
	r.From.Send(m.Raw)
}
