package turn

import (
	"github.com/pion/stun/v4"
)

// binding answers a STUN Binding request (RFC 8489 §7.3.1): "the server
// [...] MUST add an XOR-MAPPED-ADDRESS attribute to the response [...]
// containing the source transport address of the request". Unsigned: it
// needs no credentials. An unknown comprehension-required attribute is 420
// (§6.3.1.1), unsigned too.
func (h *Handler) binding(r *Request) {
	if unknown := unknownRequired(r.Msg); len(unknown) > 0 {
		h.fail(r, stun.CodeUnknownAttribute, stun.UnknownAttributes(unknown))
		return
	}
	c := r.From.Tuple.Client
	h.succeed(r, &stun.XORMappedAddress{IP: c.Addr().AsSlice(), Port: int(c.Port())})
}
