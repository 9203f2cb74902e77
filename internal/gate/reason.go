package gate

import (
	"net"

	"github.com/pion/stun/v4"

	"github.com/turnd/turnd/internal/netaddr"
	"github.com/turnd/turnd/internal/wire"
)

// NoteKey records the key pion signs its answer to client's current request
// with (pion's AuthHandler hands it over), so that withReason can sign that
// answer again once it carries its reason phrase.
func (g *Gate) NoteKey(client net.Addr, key []byte) {
	g.signingKey.put(netaddr.Of(client, nil), key)
}

// withReason returns what pion sends client, and whether it changed it: an
// error response gets the reason phrase RFC 8489 §14.8 and RFC 8656 §19
// give its code where pion left it empty, for whoever reads client logs or
// packet captures (Chromium shows a text of its own for Allocate errors). A
// signed answer is signed again with the key pion used; one whose key is
// unknown goes out as it is, and so does an unsigned 401 (see addReason).
//
// Hot path for everything pion sends a client: a two-byte look, then the
// answer's key is dropped for responses (it was only needed for this one).
func (g *Gate) withReason(b []byte, client net.Addr) ([]byte, bool) {
	if !wire.IsSTUN(b) {
		return b, false
	}
	class := wire.Type(b) & wire.ClassMask
	if class != wire.ClassError {
		if class == wire.ClassSuccess {
			g.signingKey.take(netaddr.Of(client, nil)) // a success: its key is spent
		}
		return b, false
	}
	key, _ := g.signingKey.take(netaddr.Of(client, nil))
	if out, ok := addReason(b, key); ok {
		return out, true
	}
	return b, false
}

// addReason rebuilds an error response with its default reason phrase. It
// reports false when b needs nothing (a reason is there, or the code has no
// standard phrase) or cannot be rebuilt faithfully (signed, and key is not
// the key that signed it).
func addReason(b []byte, key []byte) ([]byte, bool) {
	msg := &stun.Message{Raw: append([]byte(nil), b...)}
	if msg.Decode() != nil {
		return nil, false
	}
	var ec stun.ErrorCodeAttribute
	if ec.GetFrom(msg) != nil || len(ec.Reason) > 0 {
		return nil, false
	}
	// An unsigned 401 answers anyone's first leg, spoofed source included:
	// "Unauthorized" would take the worst-case amplification (a bare 20-byte
	// Allocate or Refresh) past the bound of 4 the README promises.
	if ec.Code == stun.CodeUnauthorized && !msg.Contains(stun.AttrMessageIntegrity) {
		return nil, false
	}
	out := stun.New()
	out.TransactionID = msg.TransactionID
	out.SetType(msg.Type)
	out.WriteHeader()
	signed, fingerprint := false, false
	for _, a := range msg.Attributes {
		switch a.Type {
		case stun.AttrErrorCode:
			if stun.ErrorCode(ec.Code).AddTo(out) != nil {
				return nil, false // no standard phrase: leave the answer alone
			}
			continue
		case stun.AttrMessageIntegrity:
			if key == nil || stun.MessageIntegrity(key).Check(msg) != nil {
				return nil, false
			}
			signed = true
			continue
		case stun.AttrMessageIntegritySHA256:
			return nil, false // pion never sends it; turnd has no key for it
		case stun.AttrFingerprint:
			fingerprint = true
			continue
		}
		out.Add(a.Type, a.Value)
	}
	// Errors here are impossible: the attributes were just decoded from a valid message.
	if signed {
		_ = stun.MessageIntegrity(key).AddTo(out)
	}
	if fingerprint {
		_ = stun.Fingerprint.AddTo(out)
	}
	return out.Raw, true
}
