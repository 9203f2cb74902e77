package gate

import (
	"encoding/binary"
	"hash/crc32"
	"net"
	"net/netip"
	"sync/atomic"

	"github.com/turnd/turnd/pkg/ratelimit"
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
	dontFragment pending[fiveTuple, struct{}]
	// chosenKey holds the key that verified a request, until pion's auth
	// handler asks for it (TakeKey). Only used with MultiKey.
	chosenKey pending[keyChoice, []byte]
	// signingKey holds the key pion signs its answer to a client with, until
	// that answer is written (withReason).
	signingKey pending[clientKey, []byte]
	// reservations maps RESERVATION-TOKENs to ports for the whole socket group.
	reservations reservationTable
	// reserving holds the user of an Allocate asking for a reservation,
	// until pion's answer carries the token (noteResponse).
	reserving pending[fiveTuple, string]
	// streams are the live TCP/TLS client connections.
	streams streamTable
	// limiter bounds unauthenticated and failing requests per client IP.
	limiter *ratelimit.Limiter
	// flight counts the messages pion is handling (Quiesce).
	flight *inFlight
}

// fiveTuple names a client's 5-tuple. The network is part of it: a UDP
// client and a TCP client may share an address and port number.
type fiveTuple struct{ network, client, server string }

func tupleOf(client, server net.Addr) fiveTuple {
	return fiveTuple{client.Network(), client.String(), server.String()}
}

type keyChoice struct{ network, client, username string }

// New returns a gate applying p.
func New(p *Policy, h Hooks) *Gate {
	g := &Gate{hooks: h, limiter: ratelimit.New(0, nil), flight: newInFlight()}
	g.SetPolicy(p)
	return g
}

// SetPolicy replaces the policy for requests inspected from now on.
func (g *Gate) SetPolicy(p *Policy) {
	g.limiter.SetRate(p.UnauthenticatedRate)
	g.policy.Store(p)
}

// STUN message types (RFC 8489 §5, RFC 8656 §17) of the requests the gate reads.
const (
	typeBindingRequest     = 0x0001
	typeAllocateRequest    = 0x0003
	typeRefreshRequest     = 0x0004
	typeChannelBindRequest = 0x0009
	typeConnectRequest     = 0x000A // RFC 6062; ConnectionBind's is in stream.go

	typeCreatePermissionRequest = 0x0008
	classMask                   = 0x0110
	classRequest                = 0x0000
)

// Inspect decides what happens to one client packet. pkt is not retained;
// a rewritten packet is returned in a fresh slice.
//
// Hot path: ChannelData (first two bits 01) and non-request STUN return
// after reading two bytes, without allocating.
func (g *Gate) Inspect(pkt []byte, src, local net.Addr, r Responder) ([]byte, Verdict) {
	out, v, _ := g.inspect(pkt, src, local, r)
	return out, v
}

// inspect is Inspect plus the relay port a reservation token resolved to.
func (g *Gate) inspect(pkt []byte, src, local net.Addr, r Responder) ([]byte, Verdict, int) {
	if len(pkt) < 20 || pkt[0]&0xC0 != 0 {
		return nil, Pass, 0
	}
	t := binary.BigEndian.Uint16(pkt)
	if t&classMask != classRequest {
		return nil, Pass, 0
	}
	integrity, fingerprintOK := scan(pkt)
	if !fingerprintOK {
		// RFC 8489 §6.3: not a STUN message after all; dropped silently.
		// It still cost a look, so it is charged like any unverified request.
		g.limiter.Charge(addrOf(src))
		if g.hooks.BadFingerprint != nil {
			g.hooks.BadFingerprint(src)
		}
		return nil, Answered, 0
	}
	p := g.policy.Load()
	if p.RefuseUnknownMethods && !knownRequest(t) {
		return nil, g.unknownMethod(pkt, src, r), 0
	}
	// STUN Binding is answered without checking credentials, whatever it
	// carries, so it always counts as unauthenticated.
	if t == typeBindingRequest || !integrity {
		// The first leg of every transaction, STUN Binding, or junk: the
		// server answers it without knowing who asks.
		out, v, port := g.unverified(src)
		if v == Pass && t == typeAllocateRequest && g.redirectUnsigned(p, pkt, src, r) {
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
func (g *Gate) unverified(src net.Addr) ([]byte, Verdict, int) {
	if !g.limiter.Allow(addrOf(src)) {
		if g.hooks.RateLimited != nil {
			g.hooks.RateLimited(src)
		}
		return nil, Answered, 0
	}
	return nil, Pass, 0
}

// panicked reports a recovered panic.
func (g *Gate) panicked(v any) {
	if g.hooks.Panicked != nil {
		g.hooks.Panicked(v)
	}
}

// STUN attributes scan looks for (RFC 8489 §18.3).
const (
	attrMessageIntegrity       = 0x0008
	attrMessageIntegritySHA256 = 0x001C
	attrFingerprint            = 0x8028
	fingerprintXOR             = 0x5354554e
	magicCookie                = 0x2112A442
)

// scan walks a STUN message's attribute headers without decoding: whether
// it carries MESSAGE-INTEGRITY(-SHA256), and whether its FINGERPRINT, if
// any, matches (RFC 8489 §14.7: CRC-32 of the message up to it, XOR
// 0x5354554e).
func scan(pkt []byte) (integrity, fingerprintOK bool) {
	end := min(len(pkt), 20+int(binary.BigEndian.Uint16(pkt[2:4])))
	for off := 20; off+4 <= end; {
		t := binary.BigEndian.Uint16(pkt[off:])
		l := int(binary.BigEndian.Uint16(pkt[off+2:]))
		switch t {
		case attrMessageIntegrity, attrMessageIntegritySHA256:
			integrity = true
		case attrFingerprint:
			if binary.BigEndian.Uint32(pkt[4:8]) != magicCookie {
				return integrity, true // not RFC 8489 STUN: pion ignores it as it always has
			}
			if l != 4 || off+8 > end {
				return integrity, false
			}
			want := crc32.ChecksumIEEE(pkt[:off]) ^ fingerprintXOR
			return integrity, binary.BigEndian.Uint32(pkt[off+4:]) == want
		}
		off += 4 + (l+3)&^3
	}
	return integrity, true
}

// addrOf is the IP address of a client transport address.
func addrOf(a net.Addr) netip.Addr {
	switch v := a.(type) {
	case *net.UDPAddr:
		return v.AddrPort().Addr()
	case *net.TCPAddr:
		return v.AddrPort().Addr()
	}
	return netip.Addr{}
}

// TakeDontFragment reports (once) whether the allocation of this 5-tuple asked for DONT-FRAGMENT.
func (g *Gate) TakeDontFragment(client, server net.Addr) bool {
	_, ok := g.dontFragment.take(tupleOf(client, server))
	return ok
}

// TakeKey returns (once) the key that verified the last request of username from client.
func (g *Gate) TakeKey(client net.Addr, username string) ([]byte, bool) {
	return g.chosenKey.take(keyChoice{client.Network(), client.String(), username})
}

// alternate returns the server to redirect a new Allocate to, rotating
// through the alternates so redirected clients spread out, or nil when the
// server accepts allocations or knows no alternate (pion then answers).
func (g *Gate) alternate(p *Policy) *net.UDPAddr {
	if p.Alternates == nil || g.hooks.Accepting == nil || g.hooks.Accepting() {
		return nil
	}
	alts := p.Alternates()
	if len(alts) == 0 {
		return nil
	}
	i := g.next.Add(1) - 1
	return alts[int(i%uint32(len(alts)))]
}
