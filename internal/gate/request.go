package gate

import (
	"encoding/binary"
	"net"
	"net/netip"
	"time"

	"github.com/pion/stun/v4"

	"github.com/turnd/turnd/internal/netaddr"
)

// protoTCP is REQUESTED-TRANSPORT's value for an RFC 6062 TCP relay.
const protoTCP = 6

// inspectRequest handles a STUN request carrying MESSAGE-INTEGRITY(-SHA256):
// it is only acted on once its MESSAGE-INTEGRITY verifies (verified);
// anything unauthenticated or malformed goes to pion, which answers
// 400/401/438 as RFC 8656 prescribes.
func (g *Gate) inspectRequest(p *Policy, pkt []byte, src, local net.Addr, r Responder) (out []byte, v Verdict, port PortRequest, verified bool) {
	msg := &stun.Message{Raw: append([]byte(nil), pkt...)}
	if msg.Decode() != nil || !msg.Contains(stun.AttrMessageIntegrity) {
		return nil, Pass, 0, false
	}
	var username stun.Username
	var realm stun.Realm
	if username.GetFrom(msg) != nil || realm.GetFrom(msg) != nil || p.Keys == nil {
		return nil, Pass, 0, false
	}
	userID, keys, err := p.Keys(username.String(), realm.String())
	if err != nil {
		return nil, Pass, 0, false
	}
	key := verifiedKey(msg, keys)
	if key == nil {
		return nil, Pass, 0, false
	}
	if p.MultiKey && len(keys) > 1 {
		g.chosenKey.put(keyChoice{netaddr.Of(src, nil), username.String()}, key)
	}
	out, v, port = g.authenticated(p, msg, key, userID, src, local, r)
	return out, v, port, true
}

// authenticated applies the gate's rules to a request whose
// MESSAGE-INTEGRITY verified with key.
func (g *Gate) authenticated(p *Policy, msg *stun.Message, key []byte, userID string, src, local net.Addr, r Responder) ([]byte, Verdict, PortRequest) {
	switch msg.Type {
	case stun.NewType(stun.MethodRefresh, stun.ClassRequest),
		stun.NewType(stun.MethodCreatePermission, stun.ClassRequest),
		stun.NewType(stun.MethodChannelBind, stun.ClassRequest):
		if p.HasAllocation != nil && !p.HasAllocation(src, local) {
			g.reply(msg, key, src, r, stun.CodeAllocMismatch)
			return nil, Answered, 0
		}
	}
	if wrongUser(p, msg, userID, src, local) {
		g.reply(msg, key, src, r, stun.CodeWrongCredentials)
		return nil, Answered, 0
	}
	switch msg.Type {
	case stun.NewType(stun.MethodConnect, stun.ClassRequest),
		stun.NewType(stun.MethodConnectionBind, stun.ClassRequest):
		return g.rfc6062(p, msg, key, userID, src, local, r)
	case stun.NewType(stun.MethodAllocate, stun.ClassRequest):
		return g.allocate(p, msg, key, userID, src, local, r)
	case stun.NewType(stun.MethodRefresh, stun.ClassRequest):
		if v, err := msg.Get(stun.AttrLifetime); err == nil && len(v) == 4 && binary.BigEndian.Uint32(v) == 0 &&
			g.hooks.Releasing != nil {
			g.hooks.Releasing(src, local)
		}
		if l := lifetimesOf(p); l.changes(msg, true) {
			return resign(msg, key, edits{lifetimes: l, refresh: true}), Rewrite, 0
		}
	case stun.NewType(stun.MethodChannelBind, stun.ClassRequest):
		if v, err := msg.Get(stun.AttrChannelNumber); err == nil && len(v) == 4 && !channelUsable(binary.BigEndian.Uint16(v)) {
			g.reply(msg, key, src, r, stun.CodeBadRequest)
			return nil, Answered, 0
		}
		var peer stun.XORMappedAddress
		if peer.GetFromAs(msg, stun.AttrXORPeerAddress) == nil && peer.Port == 0 {
			g.reply(msg, key, src, r, stun.CodeBadRequest) // port 0 is no peer
			return nil, Answered, 0
		}
		if peer.IP != nil && !g.peerAcceptable(p, peer) {
			if g.hooks.PeerRefused != nil {
				g.hooks.PeerRefused(userID, peer.IP)
			}
			g.reply(msg, key, src, r, stun.CodeForbidden)
			return nil, Answered, 0
		}
		fallthrough
	case stun.NewType(stun.MethodCreatePermission, stun.ClassRequest):
		if g.overCapacity(p, msg, src, local) {
			if g.hooks.CapacityRefused != nil {
				g.hooks.CapacityRefused(userID)
			}
			g.reply(msg, key, src, r, stun.CodeInsufficientCapacity)
			return nil, Answered, 0
		}
	}
	return nil, Pass, 0
}

// peerAcceptable applies the peer filter and refuses the server's own sockets.
func (g *Gate) peerAcceptable(p *Policy, peer stun.XORMappedAddress) bool {
	if p.PeerAllowed != nil && !p.PeerAllowed(peer.IP) {
		return false
	}
	if p.OwnAddress != nil {
		if ip, ok := netip.AddrFromSlice(peer.IP); ok && p.OwnAddress(netip.AddrPortFrom(ip.Unmap(), uint16(peer.Port))) {
			return false
		}
	}
	return true
}

// overCapacity reports whether a CreatePermission or ChannelBind would take
// the allocation past its permission or channel cap (RFC 8656 §9.2, §12.2:
// the server may refuse with 508 Insufficient Capacity). Refreshing what
// exists never counts.
func (g *Gate) overCapacity(p *Policy, msg *stun.Message, src, local net.Addr) bool {
	if p.Bindings == nil {
		return false
	}
	if limit := p.PermissionsPerAllocation; limit > 0 {
		if n, has, ok := p.Bindings.Permissions(src, local); ok {
			fresh := 0
			_ = msg.ForEach(stun.AttrXORPeerAddress, func(m *stun.Message) error {
				var a stun.XORMappedAddress
				if a.GetFromAs(m, stun.AttrXORPeerAddress) == nil {
					if ip, ok := netip.AddrFromSlice(a.IP); ok && !has(ip.Unmap()) {
						fresh++
					}
				}
				return nil
			})
			if n+fresh > limit {
				return true
			}
		}
	}
	if limit := p.ChannelsPerAllocation; limit > 0 && msg.Type.Method == stun.MethodChannelBind {
		v, err := msg.Get(stun.AttrChannelNumber)
		if n, has, ok := p.Bindings.Channels(src, local); ok && err == nil && len(v) >= 2 {
			if !has(binary.BigEndian.Uint16(v)) && n >= limit {
				return true
			}
		}
	}
	return false
}

// allocate applies RFC 8656 §7.2 steps the gate owns for an authenticated Allocate.
func (g *Gate) allocate(p *Policy, msg *stun.Message, key []byte, user string, src, local net.Addr, r Responder) ([]byte, Verdict, PortRequest) {
	// Step 8: "the server MAY choose to reject the request with a 300
	// (Try Alternate) error if it wishes to redirect the client to a
	// different server" — turnd does while draining, if it knows where to.
	if alt := g.alternate(p, src); alt != nil {
		// Hooks run before the reply, so whoever sees the reply sees the count.
		if g.hooks.Redirected != nil {
			g.hooks.Redirected(user, alt)
		}
		g.reply(msg, key, src, r, stun.CodeTryAlternate, alternateSetters(p, alt, r)...)
		return nil, Answered, 0
	}

	// Step 7 counts allocations "based on the username"; turnd also counts
	// the user's Allocates per second, so that Allocate and Refresh(0) in a
	// loop cannot cost the server a CPU. Browsers send a handful a minute.
	if !g.allocates.Allow(user) {
		if g.hooks.AllocateRateLimited != nil {
			g.hooks.AllocateRateLimited(user)
		}
		g.reply(msg, key, src, r, stun.CodeAllocQuotaReached)
		return nil, Answered, 0
	}

	// Step 3: a protocol the server does not relay is refused with 442.
	if v, err := msg.Get(stun.AttrRequestedTransport); err == nil && len(v) > 0 && v[0] == protoTCP && !p.TCPAllocations {
		if g.hooks.TCPRefused != nil {
			g.hooks.TCPRefused(user)
		}
		g.reply(msg, key, src, r, stun.CodeUnsupportedTransProto)
		return nil, Answered, 0
	}

	// Step 5, first half: "If yes, and the request also contains an
	// EVEN-PORT attribute, then the server rejects the request with a 400"
	// (and so with REQUESTED-ADDRESS-FAMILY, RFC 6156 §4.2). pion checks
	// both, but only sees a token the gate does not recognise, so the gate
	// checks before it takes the token over.
	if msg.Contains(stun.AttrReservationToken) &&
		(msg.Contains(stun.AttrEvenPort) || msg.Contains(stun.AttrRequestedAddressFamily)) {
		g.reply(msg, key, src, r, stun.CodeBadRequest)
		return nil, Answered, 0
	}

	// Step 7, taken early as steps 4 to 6 refuse nothing it would hide: a
	// family with no relay address is 440, where pion would fail the relay
	// socket and answer 508. A RESERVATION-TOKEN with the family is step 5's 400.
	if !familyServed(p, msg) && !msg.Contains(stun.AttrReservationToken) {
		g.reply(msg, key, src, r, stun.CodeAddrFamilyNotSupported)
		return nil, Answered, 0
	}

	// RFC 6062 §5.1: "If the client connection transport is not TCP or
	// TLS, the server MUST reject the request with a 400 (Bad Request)
	// error. If the request contains the DONT-FRAGMENT, EVEN-PORT, or
	// RESERVATION-TOKEN attribute, the server MUST reject the request
	// with a 400 (Bad Request) error."
	if v, err := msg.Get(stun.AttrRequestedTransport); err == nil && len(v) > 0 && v[0] == protoTCP {
		if !stream(src) || msg.Contains(stun.AttrDontFragment) || msg.Contains(stun.AttrEvenPort) ||
			msg.Contains(stun.AttrReservationToken) {
			g.reply(msg, key, src, r, stun.CodeBadRequest)
			return nil, Answered, 0
		}
	}

	// Step 4: DONT-FRAGMENT is supported: remember it for the relay socket
	// and hide it from pion, which would answer 420.
	df := msg.Contains(stun.AttrDontFragment)
	if df {
		g.dontFragment.put(netaddr.Of(src, local), struct{}{})
	}

	// Step 5: a RESERVATION-TOKEN known to the group becomes a PortRequest
	// (see reservation.go); an unknown one goes to pion, which answers 508.
	port := 0
	if token, err := msg.Get(stun.AttrReservationToken); err == nil {
		port, _ = g.reservedPort(token)
	}
	hint := PortRequest(port)
	// Step 6: EVEN-PORT with R asks for P+1 to be kept for a later Allocate;
	// without R, for an even port alone, which pion would answer with a
	// RESERVATION-TOKEN all the same: the gate returns PortEven (an even port
	// the relay picks itself) and hides the attribute from pion.
	evenOnly := false
	if v, err := msg.Get(stun.AttrEvenPort); err == nil && len(v) > 0 {
		switch {
		case v[0]&0x80 == 0:
			evenOnly, hint = true, PortEven
		case g.reservations.count(user, time.Now()) >= maxReservationsPerUser:
			// Step 7: a quota, "based on the username".
			if g.hooks.ReservationRefused != nil {
				g.hooks.ReservationRefused(user)
			}
			g.reply(msg, key, src, r, stun.CodeAllocQuotaReached)
			return nil, Answered, 0
		default:
			hint = PortPair
			if _, udp := src.(*net.UDPAddr); udp { // tokens are learnt from UDP answers only
				g.reserving.put(netaddr.Of(src, local), user)
			}
		}
	}
	if l := lifetimesOf(p); df || port != 0 || evenOnly || l.changes(msg, false) {
		return resign(msg, key, edits{dropDF: df, dropToken: port != 0, dropEvenPort: evenOnly, lifetimes: l}), Rewrite, hint
	}
	return nil, Pass, hint
}

// edits are what resign changes: the attributes it removes, and the bounds
// LIFETIME is held to.
type edits struct {
	dropDF, dropToken, dropEvenPort bool
	lifetimes                       lifetimes
	refresh                         bool // LIFETIME 0 deletes, and stays 0
}

// verifiedKey returns the key among keys that MESSAGE-INTEGRITY verifies with.
func verifiedKey(msg *stun.Message, keys [][]byte) []byte {
	for _, k := range keys {
		if stun.MessageIntegrity(k).Check(msg) == nil {
			return k
		}
	}
	return nil
}

// resign rebuilds msg without DONT-FRAGMENT (when dropDF) and with LIFETIME
// held to its bounds, then signs it again with the client's own key: pion
// then verifies it exactly as the client sent it, less what turnd took over.
func resign(msg *stun.Message, key []byte, e edits) []byte {
	out := stun.New()
	out.TransactionID = msg.TransactionID
	out.SetType(msg.Type)
	out.WriteHeader()
	hadFingerprint := false
	for _, a := range msg.Attributes {
		switch a.Type {
		case stun.AttrMessageIntegrity, stun.AttrMessageIntegritySHA256:
			continue
		case stun.AttrFingerprint:
			hadFingerprint = true
			continue
		case stun.AttrDontFragment:
			if e.dropDF {
				continue
			}
		case stun.AttrReservationToken:
			if e.dropToken {
				continue
			}
		case stun.AttrEvenPort:
			if e.dropEvenPort {
				continue
			}
		case stun.AttrLifetime:
			if len(a.Value) == 4 {
				var v [4]byte
				binary.BigEndian.PutUint32(v[:], e.lifetimes.grant(binary.BigEndian.Uint32(a.Value), e.refresh))
				out.Add(stun.AttrLifetime, v[:])
				continue
			}
		}
		out.Add(a.Type, a.Value)
	}
	// Errors here are impossible: the attributes were just decoded from a valid message.
	_ = stun.MessageIntegrity(key).AddTo(out)
	if hadFingerprint {
		_ = stun.Fingerprint.AddTo(out)
	}
	return out.Raw
}

// reply sends an error response signed with the client's key (RFC 8489 §9.2.4:
// a response to an authenticated request carries MESSAGE-INTEGRITY).
func (g *Gate) reply(msg *stun.Message, key []byte, src net.Addr, r Responder, code stun.ErrorCode, extra ...stun.Setter) {
	setters := []stun.Setter{
		&stun.Message{TransactionID: msg.TransactionID},
		stun.NewType(msg.Type.Method, stun.ClassErrorResponse),
		code,
	}
	setters = append(setters, extra...)
	setters = append(setters, stun.MessageIntegrity(key), stun.Fingerprint)
	resp, err := stun.Build(setters...)
	if err != nil {
		return
	}
	// A lost reply is a lost datagram: the client retransmits.
	_, _ = r.WriteTo(resp.Raw, src)
}
