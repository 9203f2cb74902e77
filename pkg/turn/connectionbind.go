package turn

import (
	"encoding/binary"

	"github.com/pion/stun/v4"
)

// connectionBind serves an RFC 6062 ConnectionBind (§5.4), which turns a
// new client connection into the data connection of a peer:
//
//   - "If the client connection transport is not TCP or TLS, the server
//     MUST return a 400 (Bad Request) error"; on a connection holding an
//     allocation it would turn the control connection, allocation and
//     all, into a pipe: 400 too;
//   - "If the request does not contain the CONNECTION-ID attribute, or if
//     this attribute does not refer to an existing pending connection,
//     the server MUST return a 400 (Bad Request) error"; one of another
//     user's allocations is 441 (RFC 8656 §5's rule, for the allocation
//     the connection belongs to);
//   - "Otherwise, the client connection is now called a client data
//     connection. Data received on it MUST be sent as-is to the associated
//     peer data connection": the success is answered, then the edge pipes
//     the connection, the bytes read behind the request first.
func (h *Handler) connectionBind(r *Request) {
	s := r.From.Stream
	if s == nil || r.Alloc != nil {
		h.fail(r, stun.CodeBadRequest)
		return
	}
	v, ok := attr(r.Msg, stun.AttrConnectionID)
	if !ok || len(v) != 4 {
		h.fail(r, stun.CodeBadRequest)
		return
	}
	id := binary.BigEndian.Uint32(v)
	a, _, bound, ok := h.table.Connection(id)
	switch {
	case !ok || bound:
		h.fail(r, stun.CodeBadRequest)
		return
	case a.User != r.User:
		h.fail(r, stun.CodeWrongCredentials)
		return
	}
	if _, _, err := h.table.BindConnection(id, r.Now); err != nil {
		h.fail(r, stun.CodeBadRequest) // expired, or bound by a racing request
		return
	}
	peer, ok := h.relays.TakePeer(a.Route, id)
	if !ok {
		h.table.DropConnection(id)
		h.fail(r, stun.CodeBadRequest)
		return
	}
	h.succeed(r)
	s.Pipe(peer)
}
