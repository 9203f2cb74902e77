package gate

import (
	"encoding/binary"
	"net"
	"net/netip"
	"sync/atomic"
	"time"

	"github.com/turnd/turnd/internal/netaddr"
	"github.com/turnd/turnd/internal/ratelimit"
	"github.com/turnd/turnd/internal/wire"
)

// Verdict says what became of an inspected packet.
type Verdict uint8

const (
	// Pass: hand the packet to pion unchanged.
	Pass Verdict = iota
	// Rewrite: hand the returned bytes to pion instead.
	Rewrite
	// Answered: the gate replied itself; pion never sees the packet.
	Answered
)

// Responder sends a reply to a client: the listening PacketConn for UDP, the
// connection itself for TCP and TLS.
type Responder interface {
	WriteTo(b []byte, addr net.Addr) (int, error)
}

// Gate inspects client packets; see the package comment. Safe for concurrent use.
type Gate struct {
	policy atomic.Pointer[Policy]
	hooks  Hooks
	next   atomic.Uint32 // rotation through Policy.Alternates

	// dontFragment holds the 5-tuples whose Allocate asked for DF, until the
	// server applies it to the new relay socket (TakeDontFragment).
	dontFragment pending[netaddr.FiveTuple, struct{}]
	// chosenKey holds the key that verified a request, until pion's auth
	// handler asks for it (TakeKey). Only used with MultiKey.
	chosenKey pending[keyChoice, []byte]
	// signingKey holds the key pion signs its answer to a client with, until
	// that answer is written (withReason). Keyed by the client side alone:
	// pion's AuthHandler knows no more.
	signingKey pending[netaddr.FiveTuple, []byte]
	// reservations maps RESERVATION-TOKENs to ports for the whole socket group.
	reservations reservationTable
	// reserving holds the user of an Allocate asking for a reservation,
	// until pion's answer carries the token (noteResponse).
	reserving pending[netaddr.FiveTuple, string]
	// limiter bounds unauthenticated and failing requests per client IP.
	limiter *ratelimit.Limiter
	// allocates bounds authenticated Allocates per user.
	allocates *ratelimit.Users
}

// keyChoice names a user's request from a client (the client side of a
// 5-tuple): pion's AuthHandler, which takes the key, knows no more.
type keyChoice struct {
	client   netaddr.FiveTuple
	username string
}

// New returns a gate applying p.
func New(p *Policy, h Hooks) *Gate {
	g := &Gate{hooks: h, limiter: ratelimit.New(0, nil), allocates: ratelimit.NewUsers(0, h.Now)}
	g.SetPolicy(p)
	return g
}

// SetPolicy replaces the policy for requests inspected from now on.
func (g *Gate) SetPolicy(p *Policy) {
	g.limiter.SetRate(p.UnauthenticatedRate)
	g.allocates.SetRate(p.UserAllocateRate, p.UserAllocateBurst)
	g.policy.Store(p)
}

// IdleTimeout is the current policy's IdleTimeout, read by whoever holds the
// client connections it applies to.
func (g *Gate) IdleTimeout() time.Duration { return g.policy.Load().IdleTimeout }

// Inspect decides what happens to one client packet. pkt is not retained;
// a rewritten packet is returned in a fresh slice.
//
// Hot path: ChannelData (first two bits 01) and non-request STUN return
// after reading two bytes, without allocating.
func (g *Gate) Inspect(pkt []byte, src, local net.Addr, r Responder) ([]byte, Verdict) {
	out, v, _ := g.inspect(pkt, src, local, r)
	return out, v
}

// InspectDatagram is Inspect for a datagram of a UDP socket group, plus what
// its Allocate asks of the relay port: the reservations live in the gate, the
// port is chosen by the relay of the socket pion handles the packet on.
//
// Hot path: as Inspect.
func (g *Gate) InspectDatagram(pkt []byte, src, local net.Addr, r Responder) ([]byte, Verdict, PortRequest) {
	return g.inspect(pkt, src, local, r)
}

// inspect is Inspect plus the relay port a reservation token resolved to.
func (g *Gate) inspect(pkt []byte, src, local net.Addr, r Responder) ([]byte, Verdict, PortRequest) {
	if !wire.IsSTUN(pkt) {
		return nil, Pass, 0
	}
	t := wire.Type(pkt)
	switch t & wire.ClassMask {
	case wire.ClassRequest:
	case wire.ClassIndication:
		// A Send indication the fast path left (it refuses a bad
		// FINGERPRINT too) goes to pion, which would relay it regardless.
		if _, ok := scan(pkt); !ok {
			return nil, g.badFingerprint(src), 0
		}
		return nil, Pass, 0
	default:
		return nil, Pass, 0
	}
	integrity, fingerprintOK := scan(pkt)
	if !fingerprintOK {
		return nil, g.badFingerprint(src), 0
	}
	p := g.policy.Load()
	if p.RefuseUnknownMethods && !knownRequest(t) {
		return nil, g.unknownMethod(pkt, src, r), 0
	}
	// STUN Binding is answered without checking credentials, whatever it
	// carries, so it always counts as unauthenticated.
	if t == wire.TypeBindingRequest || !integrity {
		// The first leg of every transaction, STUN Binding, or junk: the
		// server answers it without knowing who asks.
		out, v, port := g.unverified(src)
		if v == Pass && t == wire.TypeAllocateRequest && g.redirectUnsigned(p, pkt, src, r) {
			return nil, Answered, 0
		}
		return out, v, port
	}
	out, v, port, verified := g.inspectRequest(p, pkt, src, local, r)
	if !verified {
		// MESSAGE-INTEGRITY-SHA256 (which pion does not check), junk
		// MESSAGE-INTEGRITY, a bogus NONCE, an unknown user: whatever pion
		// answers (400, 401, 438), it answers a stranger.
		return g.unverified(src)
	}
	return out, v, port
}

// unverified charges a request whose sender the gate could not verify to
// its client's rate limit: within it, pion answers; past it, the request
// is dropped unanswered (no amplification).
func (g *Gate) unverified(src net.Addr) ([]byte, Verdict, PortRequest) {
	if !g.limiter.Allow(netaddr.IP(src)) {
		if g.hooks.RateLimited != nil {
			g.hooks.RateLimited(src)
		}
		return nil, Answered, 0
	}
	return nil, Pass, 0
}

// badFingerprint drops a message whose FINGERPRINT does not match: RFC 8489
// §6.3 says it is not STUN after all. It still cost a look, so it is
// charged like any unverified request.
func (g *Gate) badFingerprint(src net.Addr) Verdict {
	g.limiter.Charge(netaddr.IP(src))
	if g.hooks.BadFingerprint != nil {
		g.hooks.BadFingerprint(src)
	}
	return Answered
}

// scan walks a STUN message's attribute headers without decoding: whether
// it carries MESSAGE-INTEGRITY(-SHA256), even a truncated one, and whether
// its FINGERPRINT, if any, matches.
func scan(pkt []byte) (integrity, fingerprintOK bool) {
	a := wire.Walk(pkt)
	for a.Next() {
		switch a.Type() {
		case wire.AttrMessageIntegrity, wire.AttrMessageIntegritySHA256:
			integrity = true
		case wire.AttrFingerprint:
			if binary.BigEndian.Uint32(pkt[4:8]) != wire.MagicCookie {
				return integrity, true // not RFC 8489 STUN: pion ignores it as it always has
			}
			return integrity, wire.FingerprintOK(pkt, &a)
		}
	}
	return integrity, true
}

// TakeDontFragment reports (once) whether the allocation of this 5-tuple asked for DONT-FRAGMENT.
func (g *Gate) TakeDontFragment(client, server net.Addr) bool {
	_, ok := g.dontFragment.take(netaddr.Of(client, server))
	return ok
}

// TakeKey returns (once) the key that verified the last request of username from client.
func (g *Gate) TakeKey(client net.Addr, username string) ([]byte, bool) {
	return g.chosenKey.take(keyChoice{netaddr.Of(client, nil), username})
}

// alternate returns the server to redirect client's new Allocate to,
// rotating through the alternates so redirected clients spread out, or nil
// when the server accepts allocations or knows no alternate (pion then
// answers). One of the client's address family is preferred, the next in
// the rotation of the other family taken only when there is none; a
// loopback alternate goes to loopback clients only, the only ones that
// reach it.
func (g *Gate) alternate(p *Policy, client net.Addr) *net.UDPAddr {
	if p.Alternates == nil || g.hooks.Accepting == nil || g.hooks.Accepting() {
		return nil
	}
	alts := p.Alternates()
	if len(alts) == 0 {
		return nil
	}
	from := netaddr.IP(client)
	start := int((g.next.Add(1) - 1) % uint32(len(alts)))
	var other *net.UDPAddr
	for i := range alts {
		alt := alts[(start+i)%len(alts)]
		ip, ok := netip.AddrFromSlice(alt.IP)
		ip = ip.Unmap()
		switch {
		case !ok || ip.IsLoopback() && !from.IsLoopback():
		case ip.Is4() == from.Is4():
			return alt
		case other == nil:
			other = alt
		}
	}
	return other
}
