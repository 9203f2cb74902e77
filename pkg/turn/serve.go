package turn

import (
	"encoding/binary"

	"github.com/pion/stun/v4"

	"github.com/turnd/turnd/internal/bindings"
	"github.com/turnd/turnd/internal/wire"
)

// Serve answers one STUN message from a client (edge.Handler). msg is only
// read during the call: nothing of it is kept, and the answer, if any, is
// written through from before Serve returns.
//
// Hot path up to the decode: what a client can send at packet rates and
// the handler drops (Send indications the fast path left, other
// indications, bad FINGERPRINTs) costs a two-byte look and an attribute
// walk, and allocates nothing.
//
// In order: (1) a two-byte look and the FINGERPRINT walk; (2) decode once;
// (3) Binding and methods turnd does not serve, unauthenticated; (4)
// authenticate once; (5) unknown comprehension-required attributes; (6) the
// method's handler.
func (h *Handler) Serve(msg []byte, from *bindings.Client) {
	// RFC 8489 §6.3: "the first two bits [...] MUST be zeroes"; a
	// FINGERPRINT that does not match means the message is not STUN.
	if !wire.IsSTUN(msg) {
		h.drop(from, DropMalformed)
		return
	}
	fingerprint, ok := fingerprintOK(msg)
	if !ok {
		h.drop(from, DropBadFingerprint)
		return
	}
	t := wire.Type(msg)
	switch t & wire.ClassMask {
	case wire.ClassRequest:
	case wire.ClassIndication:
		if t == wire.TypeSendIndication {
			h.send(from)
			return
		}
		h.events.Dropped(DropIndication) // RFC 8489 §6.3.2: no answer to an indication
		return
	default:
		h.events.Dropped(DropIndication) // a client sends no responses
		return
	}

	// Decoded once, in place; the three-index slice keeps pion's HMAC
	// check from appending into whatever follows msg in the caller's buffer.
	m := &stun.Message{Raw: msg[:len(msg):len(msg)]}
	if m.Decode() != nil {
		h.drop(from, DropMalformed)
		return
	}
	r := &Request{Msg: m, From: from, Now: h.now(), policy: h.policy.Load(), fingerprint: fingerprint}

	switch t {
	case wire.TypeBindingRequest:
		// Answered without credentials whatever it carries, so it always
		// counts as unauthenticated.
		if h.admitUnverified(r) {
			h.binding(r)
		}
		return
	case wire.TypeAllocateRequest, wire.TypeRefreshRequest, wire.TypeCreatePermissionRequest,
		wire.TypeChannelBindRequest, wire.TypeConnectRequest, wire.TypeConnectionBindRequest:
	default:
		// RFC 8489 §6.3.1: a request of an unknown method is answered 400.
		// Nobody is authenticated for it.
		if h.admitUnverified(r) {
			h.fail(r, stun.CodeBadRequest)
		}
		return
	}

	if !h.authenticate(r) {
		return
	}
	// RFC 8489 §6.3.1.1: "If the request contains one or more unknown
	// comprehension-required attributes, the server replies with an error
	// response with an error code of 420 (Unknown Attribute) and includes
	// an UNKNOWN-ATTRIBUTES attribute": signed, the request verified.
	if unknown := unknownRequired(m); len(unknown) > 0 {
		h.fail(r, stun.CodeUnknownAttribute, stun.UnknownAttributes(unknown))
		return
	}
	h.method(r)
}

// drop drops a message that is not STUN after all, charged to its client's
// rate limit like any unverified request: it cost a look.
func (h *Handler) drop(from *bindings.Client, reason string) {
	h.unverified.Charge(from.Tuple.Client.Addr())
	h.events.Dropped(reason)
}

// admitUnverified spends a token of r's client for an answer to a request
// whose sender is not verified; past the limit the request is dropped
// unanswered, so a spoofed source gets nothing amplified.
func (h *Handler) admitUnverified(r *Request) bool {
	if h.unverified.Allow(r.From.Tuple.Client.Addr()) {
		return true
	}
	h.events.Dropped(DropRateLimited)
	return false
}

// fingerprintOK walks msg's attribute headers without decoding: whether it
// carries a FINGERPRINT, and whether that FINGERPRINT matches (true when
// there is none). A message without RFC 8489's magic cookie is RFC 3489
// STUN, whose FINGERPRINT-typed attribute means nothing and is not checked.
func fingerprintOK(msg []byte) (present, ok bool) {
	a := wire.Walk(msg)
	for a.Next() {
		if a.Type() != wire.AttrFingerprint {
			continue
		}
		if binary.BigEndian.Uint32(msg[4:8]) != wire.MagicCookie {
			return true, true
		}
		return true, wire.FingerprintOK(msg, &a)
	}
	return false, true
}
