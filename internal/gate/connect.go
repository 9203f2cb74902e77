package gate

import (
	"net"

	"github.com/pion/stun/v4"
)

// RFC 6062 (TURN over TCP to TCP peers): the requests pion would handle in
// the wrong place or not answer. pion dials a Connect's peer on the
// goroutine that read the request; over UDP that is the listening socket's
// only read loop, so the gate makes sure a Connect only ever reaches pion
// from a TCP or TLS control connection holding an RFC 6062 allocation.

// stream reports whether a client address is a TCP or TLS connection's.
func stream(src net.Addr) bool {
	_, ok := src.(*net.TCPAddr)
	return ok
}

// rfc6062 applies RFC 6062 §5.2 (Connect) and §5.4 (ConnectionBind) to an
// authenticated request; key signs the answers.
func (g *Gate) rfc6062(p *Policy, msg *stun.Message, key []byte, user string, src, local net.Addr, r Responder) ([]byte, Verdict, PortRequest) {
	// RFC 6062 §5.2/§5.4: Connect and ConnectionBind belong to TCP and TLS
	// client connections; over UDP they are answered 400, and pion never
	// dials from the UDP socket's read loop.
	if !stream(src) {
		g.reply(msg, key, src, r, stun.CodeBadRequest)
		return nil, Answered, 0
	}
	held := p.HasAllocation != nil && p.HasAllocation(src, local)
	if msg.Type.Method == stun.MethodConnectionBind {
		// §5.4: a ConnectionBind opens a new data connection. On a control
		// connection it would turn that connection, allocation and all,
		// into a pipe to a peer.
		if held {
			g.reply(msg, key, src, r, stun.CodeBadRequest)
			return nil, Answered, 0
		}
		return nil, Pass, 0
	}
	// §5.2: "If the request is received on a TCP connection for which no
	// allocation exists, the server MUST return a 437 (Allocation
	// Mismatch) error" (pion stays silent).
	if p.HasAllocation != nil && !held {
		g.reply(msg, key, src, r, stun.CodeAllocMismatch)
		return nil, Answered, 0
	}
	full, tcp := false, true
	if p.TCPRelay != nil {
		full, tcp = p.TCPRelay(src, local)
	}
	switch {
	case !tcp:
		// A Connect on a UDP allocation: there is no TCP relay to dial from.
		g.reply(msg, key, src, r, stun.CodeBadRequest)
		return nil, Answered, 0
	case !p.TCPAllocations:
		// TCP relaying was switched off (by a reload) after this
		// allocation was made: no new peer connections.
		g.reply(msg, key, src, r, stun.CodeForbidden)
		return nil, Answered, 0
	}
	// §5.2: "If the new connection would not be permitted under the
	// current set of permissions for this allocation, the server MUST
	// return a 403 (Forbidden) error": the peer filter and turnd's own
	// sockets, as for ChannelBind.
	var peer stun.XORMappedAddress
	if peer.GetFromAs(msg, stun.AttrXORPeerAddress) == nil && peer.Port == 0 {
		// "If the request does not contain an XOR-PEER-ADDRESS attribute,
		// or if such attribute is invalid, the server MUST return a 400":
		// pion's CreateTCPConnection refuses port 0 and its handler stays silent.
		g.reply(msg, key, src, r, stun.CodeBadRequest)
		return nil, Answered, 0
	}
	if peer.IP != nil && !g.peerAcceptable(p, peer) {
		if g.hooks.PeerRefused != nil {
			g.hooks.PeerRefused(user, peer.IP)
		}
		g.reply(msg, key, src, r, stun.CodeForbidden)
		return nil, Answered, 0
	}
	// Each pending Connect holds a socket (pion keeps an unbound one for
	// 30 s): past the bound, 508 Insufficient Capacity (RFC 8656 §7.2's
	// answer to a server out of resources; 446 and 447 mean a duplicate
	// and a failed peer, which this is not).
	if full {
		if g.hooks.CapacityRefused != nil {
			g.hooks.CapacityRefused(user)
		}
		g.reply(msg, key, src, r, stun.CodeInsufficientCapacity)
		return nil, Answered, 0
	}
	return nil, Pass, 0
}
