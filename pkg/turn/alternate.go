package turn

import (
	"net/netip"

	"github.com/pion/stun/v4"
)

// redirectUnsigned answers an Allocate without credentials with 300 Try
// Alternate while the table does not admit (RFC 8489 §10: ALTERNATE-SERVER
// on the first leg, before any challenge). It carries no NONCE or REALM: a
// client that follows it is challenged at the alternate, where a nonce
// issued here would be stale (438), which browsers do not retry on
// Allocate. Unsigned, as the request was: a forged 300 could send the
// client elsewhere, but so could a forged 401, and the client still
// authenticates to whichever server it reaches. It reports whether it
// answered.
func (h *Handler) redirectUnsigned(r *Request) bool {
	if r.Msg.Type.Method != stun.MethodAllocate {
		return false
	}
	alt, ok := h.alternate(r)
	if !ok {
		return false
	}
	h.events.Refused(stun.MethodAllocate.String(), RefusedRedirected, "", r.From.Tuple.Client)
	h.fail(r, stun.CodeTryAlternate, alternateAttrs(r, alt)...)
	return true
}

// alternate returns the server to send r's client to while the table does
// not admit, rotating through the alternates so redirected clients spread
// out; false when the table admits or there is none. One of the client's
// family is preferred, the next of the other family taken only when there
// is none; a loopback alternate goes to loopback clients only, the only
// ones that reach it.
func (h *Handler) alternate(r *Request) (netip.AddrPort, bool) {
	p := r.policy
	if p.Alternates == nil || h.admitting() {
		return netip.AddrPort{}, false
	}
	alts := p.Alternates()
	if len(alts) == 0 {
		return netip.AddrPort{}, false
	}
	from := r.From.Tuple.Client.Addr().Unmap()
	start := int((h.next.Add(1) - 1) % uint32(len(alts))) //nolint:gosec // a short list
	var other netip.AddrPort
	for i := range alts {
		alt := alts[(start+i)%len(alts)]
		ip := alt.Addr().Unmap()
		switch {
		case !ip.IsValid() || ip.IsLoopback() && !from.IsLoopback():
		case ip.Is4() == from.Is4():
			return alt, true
		case !other.IsValid():
			other = alt
		}
	}
	return other, other.IsValid()
}

// alternateAttrs are the attributes naming alt in a 300: ALTERNATE-SERVER,
// and ALTERNATE-DOMAIN when the request came over TLS and a name is set.
// Over TLS the alternate's port is this connection's own: the list names
// one port for every transport, the plain TURN port, a fleet listens on the
// same ports everywhere, and a turns: client sent to a plain TCP port would
// fail its handshake.
func alternateAttrs(r *Request, alt netip.AddrPort) []stun.Setter {
	port := int(alt.Port())
	if r.From.TLS {
		port = int(r.From.Tuple.Server.Port())
	}
	out := []stun.Setter{&stun.AlternateServer{IP: alt.Addr().Unmap().AsSlice(), Port: port}}
	if r.policy.AlternateDomain != "" && r.From.TLS {
		out = append(out, stun.RawAttribute{Type: stun.AttrAlternateDomain, Value: []byte(r.policy.AlternateDomain)})
	}
	return out
}
