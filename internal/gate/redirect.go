package gate

import (
	"net"

	"github.com/pion/stun/v4"
)

// redirectUnsigned answers an Allocate without credentials with 300 Try
// Alternate while draining (RFC 8489 §10: ALTERNATE-SERVER on the first leg,
// before any challenge). It carries no NONCE or REALM: a client that follows
// it starts afresh at the alternate and is challenged there, where a nonce
// issued here would be stale (438), which browsers do not retry on Allocate.
// The answer is unsigned, as the request was: a forged 300 could send the
// client elsewhere, but so could a forged 401 or a dropped packet, and the
// client still authenticates to whichever server it reaches.
//
// It reports whether it answered: not while accepting or without
// alternates, nor for a message that does not decode (pion's to refuse).
func (g *Gate) redirectUnsigned(p *Policy, pkt []byte, src net.Addr, r Responder) bool {
	msg := &stun.Message{Raw: append([]byte(nil), pkt...)}
	if msg.Decode() != nil {
		return false
	}
	alt := g.alternate(p, src)
	if alt == nil {
		return false
	}
	if g.hooks.Redirected != nil {
		g.hooks.Redirected("", alt)
	}
	setters := []stun.Setter{
		&stun.Message{TransactionID: msg.TransactionID},
		stun.NewType(stun.MethodAllocate, stun.ClassErrorResponse),
		stun.CodeTryAlternate,
	}
	setters = append(setters, alternateSetters(p, alt, r)...)
	// FINGERPRINT only if the client uses it: the answer to a bare request
	// stays small (amplification).
	if msg.Contains(stun.AttrFingerprint) {
		setters = append(setters, stun.Fingerprint)
	}
	resp, err := stun.Build(setters...)
	if err != nil {
		return false
	}
	// A lost reply is a lost datagram: the client retransmits.
	_, _ = r.WriteTo(resp.Raw, src)
	return true
}

// alternateSetters are the attributes naming alt in a 300: ALTERNATE-SERVER,
// and ALTERNATE-DOMAIN when the request came over TLS and a name is set.
//
// Over TLS the alternate's port is this connection's own: the list names one
// port for every transport, which is the plain TURN port, and a fleet
// listens on the same ports everywhere; a turns: client sent to a plain TCP
// port would fail its handshake.
func alternateSetters(p *Policy, alt *net.UDPAddr, r Responder) []stun.Setter {
	port, tls := alt.Port, false
	if tlsPort, ok := overTLS(r); ok {
		port, tls = tlsPort, true
	}
	out := []stun.Setter{&stun.AlternateServer{IP: alt.IP, Port: port}}
	if p.AlternateDomain != "" && tls {
		out = append(out, stun.RawAttribute{Type: stun.AttrAlternateDomain, Value: []byte(p.AlternateDomain)})
	}
	return out
}

// TLSResponder is a Responder on a TLS connection, which tells its local
// port: a 300 over TLS names it (see alternateSetters).
type TLSResponder interface {
	Responder
	// TLSPort is the connection's local port, and false if the connection
	// is not TLS after all.
	TLSPort() (int, bool)
}

// overTLS reports whether r answers on a TLS connection, and its local port.
func overTLS(r Responder) (int, bool) {
	c, ok := r.(TLSResponder)
	if !ok {
		return 0, false
	}
	return c.TLSPort()
}
