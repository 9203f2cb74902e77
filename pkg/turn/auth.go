package turn

import (
	"github.com/pion/stun/v4"
)

// authenticate checks r's long-term credentials once, in pion's order
// (which TestConformance and TestAmplification pin), and sets r.User,
// r.Username, r.Realm and r.Key. When it reports false it has answered the
// request, or dropped it past the unauthenticated rate.
//
// RFC 8489 §9.2.4, the server's checks:
func (h *Handler) authenticate(r *Request) bool {
	m, p := r.Msg, r.policy
	// "If the message does not contain a MESSAGE-INTEGRITY or
	// MESSAGE-INTEGRITY-SHA256 attribute [...] the server MUST generate an
	// error response with an error code of 401 (Unauthenticated). This
	// response MUST include a REALM value [...] MUST include a NONCE". turnd
	// checks no SHA-256 (docs/control-plane.md section 3), so a request
	// carrying MESSAGE-INTEGRITY-SHA256 alone is answered as one carrying
	// none.
	if !m.Contains(stun.AttrMessageIntegrity) {
		if h.admitUnverified(r) && !h.redirectUnsigned(r) {
			h.challenge(r, stun.CodeUnauthorized)
		}
		return false
	}
	// "If the message contains a MESSAGE-INTEGRITY or a
	// MESSAGE-INTEGRITY-SHA256 attribute, but is missing either the
	// USERNAME or USERHASH, REALM, or NONCE attribute, the server MUST
	// generate an error response with an error code of 400 (Bad
	// Request)." pion looks at NONCE first, and at the nonce's validity
	// before USERNAME and REALM.
	var nonce stun.Nonce
	if nonce.GetFrom(m) != nil {
		h.refuseUnverified(r, stun.CodeBadRequest)
		return false
	}
	// "If the NONCE is no longer valid, the server MUST generate an error
	// response with an error code of 438 (Stale Nonce). This response MUST
	// include NONCE and REALM attributes".
	if h.nonces.Check(string(nonce), r.Now) != nil {
		if h.admitUnverified(r) {
			h.challenge(r, stun.CodeStaleNonce)
		}
		return false
	}
	var realm stun.Realm
	var username stun.Username
	if realm.GetFrom(m) != nil || username.GetFrom(m) != nil {
		h.refuseUnverified(r, stun.CodeBadRequest)
		return false
	}
	r.Username, r.Realm = string(username), string(realm)
	// "If the username in the USERNAME attribute is not valid, the server
	// MUST generate an error response with an error code of 401": after
	// the same HMAC work as a wrong password, on a decoy key, so that an
	// unknown user cannot be told from a known one by timing.
	user, keys, err := p.Creds.Keys(r.Username, r.Realm)
	if err != nil {
		keys = p.Creds.Decoy()
	}
	// "Using the password associated with the username in the USERNAME
	// attribute, compute the value for the message integrity [...] If the
	// resulting value does not match the contents of the
	// MESSAGE-INTEGRITY attribute, [...] the server MUST reject the
	// request with an error response. This response MUST use an error
	// code of 401". Several keys: TURN REST secrets in rotation.
	var key []byte
	for _, k := range keys {
		if stun.MessageIntegrity(k).Check(m) == nil {
			key = k
			break
		}
	}
	if key == nil || err != nil {
		if h.admitUnverified(r) {
			h.events.Refused(m.Type.Method.String(), RefusedAuth, r.Username, r.From.Tuple.Client)
			h.challenge(r, stun.CodeUnauthorized)
		}
		return false
	}
	r.User, r.Key = user, key
	return true
}

// challenge answers r with code, a fresh NONCE and the REALM (RFC 8489
// §9.2.4), unsigned: the client has no key the server trusts yet. A 401
// carries no reason phrase: it answers anyone's first leg, spoofed sources
// included, and "Unauthorized" would take a bare 20-byte Allocate's answer
// past the amplification bound of 4 that README promises.
func (h *Handler) challenge(r *Request, code stun.ErrorCode) {
	var ec stun.Setter = code
	if code == stun.CodeUnauthorized {
		ec = &stun.ErrorCodeAttribute{Code: code}
	}
	h.answer(r, stun.ClassErrorResponse, ec,
		stun.NewNonce(h.nonces.Issue(r.Now)), stun.NewRealm(r.policy.Creds.Realm()))
}

// refuseUnverified answers r with code, unsigned, within the
// unauthenticated rate.
func (h *Handler) refuseUnverified(r *Request, code stun.ErrorCode) {
	if h.admitUnverified(r) {
		h.fail(r, code)
	}
}
