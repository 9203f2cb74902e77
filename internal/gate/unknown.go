package gate

import (
	"net"

	"github.com/pion/stun/v4"

	"github.com/turnd/turnd/internal/netaddr"
	"github.com/turnd/turnd/internal/wire"
)

// knownRequest reports whether t is a request pion serves. Send, Data and
// ConnectionAttempt exist as indications only.
func knownRequest(t uint16) bool {
	switch t {
	case wire.TypeBindingRequest, wire.TypeAllocateRequest, wire.TypeRefreshRequest, wire.TypeCreatePermissionRequest,
		wire.TypeChannelBindRequest, wire.TypeConnectRequest, wire.TypeConnectionBindRequest:
		return true
	}
	return false
}

// unknownMethod answers a request for a method turnd does not serve with
// 400 Bad Request, where pion stays silent and the client retransmits until
// it gives up. Nobody is authenticated for an unknown method, so it spends a
// rate-limit token like any unauthenticated request. A message that does not
// decode is no STUN message: pion drops it (RFC 8489 §6.3).
func (g *Gate) unknownMethod(pkt []byte, src net.Addr, r Responder) Verdict {
	if !g.limiter.Allow(netaddr.IP(src)) {
		if g.hooks.RateLimited != nil {
			g.hooks.RateLimited(src)
		}
		return Answered // dropped unanswered: no amplification
	}
	msg := &stun.Message{Raw: append([]byte(nil), pkt...)}
	if msg.Decode() != nil {
		return Pass
	}
	resp, err := stun.Build(&stun.Message{TransactionID: msg.TransactionID},
		stun.NewType(msg.Type.Method, stun.ClassErrorResponse), stun.CodeBadRequest, stun.Fingerprint)
	if err != nil {
		return Pass
	}
	// A lost reply is a lost datagram: the client retransmits.
	_, _ = r.WriteTo(resp.Raw, src)
	return Answered
}
