package server_test

import (
	"net"
	"slices"
	"testing"
	"time"

	"github.com/pion/stun/v4"

	"github.com/turnd/turnd/internal/testturn"
)

// methodUnknown is a STUN method no TURN or STUN RFC defines.
const methodUnknown stun.Method = 0x050

// ipv6Peer is a peer of the family a loopback IPv4 allocation cannot reach.
var ipv6Peer = &net.UDPAddr{IP: net.ParseIP("2001:db8::1"), Port: 9}

// conformanceRules is the table TestConformance runs.
func conformanceRules() []rule {
	return []rule{
		// Authentication (RFC 8489 §9.2).
		{section: "RFC 8489 §9.2.4", name: "unsigned request: 401 with REALM and NONCE", nets: both,
			send: func(_ *testing.T, e *ruleEnv) *stun.Message {
				return e.c.Answer(e.c.Build(stun.MethodAllocate, testturn.UDPTransport))
			},
			want: 401, check: realmAndNonce},
		{section: "RFC 8489 §9.2.4", name: "stale nonce: 438 with REALM and NONCE", nets: both,
			send: func(_ *testing.T, e *ruleEnv) *stun.Message {
				e.c.Learn()
				return e.c.Answer(e.c.WithNonce("not-a-nonce-turnd-issued").Build(stun.MethodAllocate, testturn.UDPTransport))
			},
			want: 438, check: realmAndNonce},
		{section: "RFC 8489 §6.3.1", name: "unknown comprehension-required attribute: 420 with UNKNOWN-ATTRIBUTES", nets: both,
			send: func(_ *testing.T, e *ruleEnv) *stun.Message {
				return e.c.Ask(stun.MethodAllocate, testturn.UDPTransport, testturn.RawAttr(0x7F01, []byte{1, 2, 3, 4}))
			},
			want: 420, check: func(t *testing.T, _ *ruleEnv, resp *stun.Message) {
				var u stun.UnknownAttributes
				if err := u.GetFrom(resp); err != nil || !slices.Contains(u, stun.AttrType(0x7F01)) {
					t.Errorf("UNKNOWN-ATTRIBUTES %v (%v), want 0x7F01 listed", u, err)
				}
			}},
		{section: "RFC 8489 §6.3", name: "request of an unknown method: 400", nets: both,
			send: func(t *testing.T, e *ruleEnv) *stun.Message {
				req, err := stun.Build(stun.TransactionID, stun.NewType(methodUnknown, stun.ClassRequest), stun.Fingerprint)
				if err != nil {
					t.Fatal(err)
				}
				return e.c.Answer(req)
			},
			want: 400},
		{section: "RFC 8489 §6.3", name: "request whose FINGERPRINT does not match: no answer", nets: both,
			send: func(_ *testing.T, e *ruleEnv) *stun.Message {
				e.c.Learn()
				req := e.c.Build(stun.MethodAllocate, testturn.UDPTransport)
				req.Raw[len(req.Raw)-1] ^= 0xFF
				return e.c.Answer(req)
			},
			want: noAnswer},

		// Allocate (RFC 8656 §7.2).
		{section: "RFC 8656 §7.2 step 2", name: "second Allocate on a 5-tuple: 437", nets: both,
			send: func(t *testing.T, e *ruleEnv) *stun.Message {
				e.allocate(t, false)
				return e.c.Ask(stun.MethodAllocate, testturn.UDPTransport)
			},
			want: 437},
		{section: "RFC 8656 §7.2 step 2", name: "retransmitted Allocate: the same success", nets: udpOnly,
			send: func(t *testing.T, e *ruleEnv) *stun.Message {
				e.c.Learn()
				req := e.c.Build(stun.MethodAllocate, testturn.UDPTransport)
				first := e.c.Answer(req)
				if first == nil || testturn.ErrorCode(first) != 0 {
					t.Fatal("first Allocate failed")
				}
				again := e.c.Answer(req)
				if again != nil && !sameAttrs(first, again, stun.AttrXORRelayedAddress, stun.AttrXORMappedAddress, stun.AttrLifetime) {
					t.Errorf("retransmission answered %v, first answer %v", again, first)
				}
				return again
			},
			want: 0},
		{section: "RFC 8656 §7.2 step 5", name: "RESERVATION-TOKEN with EVEN-PORT: 400", nets: both,
			send: func(t *testing.T, e *ruleEnv) *stun.Message {
				return dial(t, e.s, e.net).Ask(stun.MethodAllocate, testturn.UDPTransport, e.reservationToken(t), evenPortR0)
			},
			want: 400},
		{section: "RFC 8656 §7.2 step 5", name: "RESERVATION-TOKEN with REQUESTED-ADDRESS-FAMILY: 400", nets: both,
			send: func(t *testing.T, e *ruleEnv) *stun.Message {
				return dial(t, e.s, e.net).Ask(stun.MethodAllocate, testturn.UDPTransport, e.reservationToken(t), familyIPv4)
			},
			want: 400},
		{section: "RFC 8656 §7.2 step 6", name: "EVEN-PORT with R=0: an even port, no RESERVATION-TOKEN", nets: both,
			send: func(_ *testing.T, e *ruleEnv) *stun.Message {
				return e.c.Ask(stun.MethodAllocate, testturn.UDPTransport, evenPortR0)
			},
			want: 0, check: func(t *testing.T, _ *ruleEnv, resp *stun.Message) {
				if resp.Contains(stun.AttrReservationToken) {
					t.Error("RESERVATION-TOKEN issued")
				}
				if p := testturn.Relayed(t, resp).Port; p%2 != 0 {
					t.Errorf("odd relay port %d", p)
				}
			}},
		{section: "RFC 8656 §7.2 step 7", name: "REQUESTED-ADDRESS-FAMILY with no relay address of it: 440", nets: both,
			send: func(_ *testing.T, e *ruleEnv) *stun.Message {
				return e.c.Ask(stun.MethodAllocate, testturn.UDPTransport, family(2))
			},
			want: 440, check: func(t *testing.T, e *ruleEnv, resp *stun.Message) {
				if !e.c.Signed(resp) {
					t.Error("440 not signed")
				}
			}},
		{section: "RFC 8656 §7.2", name: "LIFETIME 0 on Allocate: the default", nets: both,
			send: func(_ *testing.T, e *ruleEnv) *stun.Message {
				return e.c.Ask(stun.MethodAllocate, testturn.UDPTransport, testturn.Lifetime(0))
			},
			want: 0, check: lifetimeIs(10 * time.Minute)},
		{section: "RFC 8656 §7.2", name: "LIFETIME below the default on Allocate: the default", nets: both,
			send: func(_ *testing.T, e *ruleEnv) *stun.Message {
				return e.c.Ask(stun.MethodAllocate, testturn.UDPTransport, testturn.Lifetime(30*time.Second))
			},
			want: 0, check: lifetimeIs(10 * time.Minute)},
		{section: "RFC 8656 §7.2", name: "LIFETIME between the default and the cap: as asked", nets: both,
			send: func(_ *testing.T, e *ruleEnv) *stun.Message {
				return e.c.Ask(stun.MethodAllocate, testturn.UDPTransport, testturn.Lifetime(20*time.Minute))
			},
			want: 0, check: lifetimeIs(20 * time.Minute)},
		{section: "RFC 8656 §7.2", name: "LIFETIME above the cap: the cap", nets: both,
			send: func(_ *testing.T, e *ruleEnv) *stun.Message {
				return e.c.Ask(stun.MethodAllocate, testturn.UDPTransport, testturn.Lifetime(2*time.Hour))
			},
			want: 0, check: lifetimeIs(30 * time.Minute)},

		// Refresh (RFC 8656 §8.2).
		{section: "RFC 8656 §8.2", name: "LIFETIME below the default on Refresh: the default", nets: both,
			send: func(t *testing.T, e *ruleEnv) *stun.Message {
				e.allocate(t, false)
				return e.c.Ask(stun.MethodRefresh, testturn.Lifetime(30*time.Second))
			},
			want: 0, check: lifetimeIs(10 * time.Minute)},
		{section: "RFC 8656 §8.2", name: "LIFETIME 0 on Refresh: deleted", nets: both,
			send: func(t *testing.T, e *ruleEnv) *stun.Message {
				e.allocate(t, false)
				return e.c.Ask(stun.MethodRefresh, testturn.Lifetime(0))
			},
			want: 0, check: func(t *testing.T, e *ruleEnv, resp *stun.Message) {
				lifetimeIs(0)(t, e, resp)
				if code := testturn.ErrorCode(e.c.Ask(stun.MethodRefresh, testturn.Lifetime(time.Hour))); code != 437 {
					t.Errorf("Refresh after the deletion: %d, want 437", code)
				}
			}},

		// Another user's allocation (RFC 8656 §5).
		{section: "RFC 8656 §5", name: "Refresh signed by another user: 441", nets: both,
			send: func(t *testing.T, e *ruleEnv) *stun.Message {
				e.allocate(t, false)
				return e.other().Ask(stun.MethodRefresh, testturn.Lifetime(10*time.Minute))
			},
			want: 441, check: signedByOther},
		{section: "RFC 8656 §5", name: "CreatePermission signed by another user: 441", nets: both,
			send: func(t *testing.T, e *ruleEnv) *stun.Message {
				e.allocate(t, false)
				return e.other().Ask(stun.MethodCreatePermission, testturn.PeerAddr(e.peer))
			},
			want: 441, check: signedByOther},
		{section: "RFC 8656 §5", name: "ChannelBind signed by another user: 441", nets: both,
			send: func(t *testing.T, e *ruleEnv) *stun.Message {
				e.allocate(t, false)
				return e.other().Ask(stun.MethodChannelBind, channel(0x4000), testturn.PeerAddr(e.peer))
			},
			want: 441, check: signedByOther},

		// Permissions (RFC 8656 §9, §10.2).
		{section: "RFC 8656 §9", name: "a permission covers every port of the peer's address", nets: both,
			send: func(t *testing.T, e *ruleEnv) *stun.Message {
				e.allocate(t, false)
				return e.c.Ask(stun.MethodCreatePermission, testturn.PeerAddr(e.peer))
			},
			want: 0, check: func(t *testing.T, e *ruleEnv, _ *stun.Message) {
				if other := echoPeer(t); !e.c.Echo(other, "other port") {
					t.Errorf("no data relayed to %v under the permission for %v", other, e.peer)
				}
			}},
		{section: "RFC 8656 §10.2", name: "CreatePermission for a peer of the other family: 443", nets: both,
			send: func(t *testing.T, e *ruleEnv) *stun.Message {
				e.allocate(t, false)
				return e.c.Ask(stun.MethodCreatePermission, testturn.PeerAddr(ipv6Peer))
			},
			want: 443},

		// Channels (RFC 8656 §12.2).
		{section: "RFC 8656 §12.2", name: "channel number below 0x4000: 400", nets: both,
			send: func(t *testing.T, e *ruleEnv) *stun.Message {
				e.allocate(t, false)
				return e.c.Ask(stun.MethodChannelBind, channel(0x3FFF), testturn.PeerAddr(e.peer))
			},
			want: 400},
		{section: "RFC 8656 §12.2", name: "channel number above 0x7FFF: 400", nets: both,
			send: func(t *testing.T, e *ruleEnv) *stun.Message {
				e.allocate(t, false)
				return e.c.Ask(stun.MethodChannelBind, channel(0x8000), testturn.PeerAddr(e.peer))
			},
			want: 400},
		{section: "RFC 5766 §11", name: "channel number 0x7FFF (kept for WebRTC clients): bound and relayed", nets: both,
			send: func(t *testing.T, e *ruleEnv) *stun.Message {
				e.allocate(t, false)
				return e.c.Ask(stun.MethodChannelBind, channel(0x7FFF), testturn.PeerAddr(e.peer))
			},
			want: 0, check: func(t *testing.T, e *ruleEnv, _ *stun.Message) {
				if !e.c.EchoChannel(0x7FFF, "top channel") {
					t.Error("no data relayed on channel 0x7FFF")
				}
			}},
		{section: "RFC 8656 §12.2", name: "bound channel to another peer: 400", nets: both,
			send: func(t *testing.T, e *ruleEnv) *stun.Message {
				e.allocate(t, false)
				if code := testturn.ErrorCode(e.c.ChannelBind(0x4000, e.peer)); code != 0 {
					t.Fatalf("first ChannelBind: %d", code)
				}
				return e.c.Ask(stun.MethodChannelBind, channel(0x4000), testturn.PeerAddr(echoPeer(t)))
			},
			want: 400},
		{section: "RFC 8656 §12.2", name: "bound peer to another channel: 400", nets: both,
			send: func(t *testing.T, e *ruleEnv) *stun.Message {
				e.allocate(t, false)
				if code := testturn.ErrorCode(e.c.ChannelBind(0x4000, e.peer)); code != 0 {
					t.Fatalf("first ChannelBind: %d", code)
				}
				return e.c.Ask(stun.MethodChannelBind, channel(0x4001), testturn.PeerAddr(e.peer))
			},
			want: 400},

		// TCP relays (RFC 6062 §5.1): only over a TCP or TLS connection, and
		// without the attributes that only a UDP relay has a use for.
		{section: "RFC 6062 §5.1", name: "REQUESTED-TRANSPORT TCP over UDP: 400", nets: udpOnly,
			send: func(_ *testing.T, e *ruleEnv) *stun.Message {
				return e.c.Ask(stun.MethodAllocate, testturn.TCPTransport)
			},
			want: 400},
		{section: "RFC 6062 §5.1", name: "TCP Allocate with EVEN-PORT: 400", nets: tcpOnly,
			send: func(_ *testing.T, e *ruleEnv) *stun.Message {
				return e.c.Ask(stun.MethodAllocate, testturn.TCPTransport, testturn.RawAttr(stun.AttrEvenPort, []byte{0x80}))
			},
			want: 400},
		{section: "RFC 6062 §5.1", name: "TCP Allocate with DONT-FRAGMENT: 400", nets: tcpOnly,
			send: func(_ *testing.T, e *ruleEnv) *stun.Message {
				return e.c.Ask(stun.MethodAllocate, testturn.TCPTransport, testturn.RawAttr(stun.AttrDontFragment, nil))
			},
			want: 400},

		// TCP relays (RFC 6062 §5.2).
		{section: "RFC 6062 §5.2", name: "Connect over UDP: 400", nets: udpOnly,
			send: func(t *testing.T, e *ruleEnv) *stun.Message {
				e.allocate(t, false)
				return e.c.Ask(stun.MethodConnect, testturn.PeerAddr(tcpPeer(t)))
			},
			want: 400},
		{section: "RFC 6062 §5.2", name: "Connect on a UDP allocation: 400", nets: tcpOnly,
			send: func(t *testing.T, e *ruleEnv) *stun.Message {
				e.allocate(t, false)
				return e.c.Ask(stun.MethodConnect, testturn.PeerAddr(tcpPeer(t)))
			},
			want: 400},
		{section: "RFC 6062 §5.2", name: "Connect without an allocation: 437", nets: tcpOnly,
			send: func(t *testing.T, e *ruleEnv) *stun.Message {
				return e.c.Ask(stun.MethodConnect, testturn.PeerAddr(tcpPeer(t)))
			},
			want: 437},
		{section: "RFC 6062 §5.2", name: "Connect to a peer that refuses: 447", nets: tcpOnly,
			send: func(t *testing.T, e *ruleEnv) *stun.Message {
				e.allocate(t, true)
				closed := &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: testturn.FreeTCPPort(t)}
				return e.c.Connect(closed) // answered when the dial ends, after any request behind it
			},
			want: 447},
		{section: "RFC 6062 §5.2", name: "second Connect to a connected peer: 446", nets: tcpOnly,
			send: func(t *testing.T, e *ruleEnv) *stun.Message {
				e.allocate(t, true)
				peer := tcpPeer(t)
				if code := testturn.ErrorCode(e.c.Connect(peer)); code != 0 {
					t.Fatalf("first Connect: %d", code)
				}
				return e.c.Ask(stun.MethodConnect, testturn.PeerAddr(peer))
			},
			want: 446},
		{section: "RFC 6062 §5.2", name: "Connect to port 0: 400", nets: tcpOnly,
			send: func(t *testing.T, e *ruleEnv) *stun.Message {
				e.allocate(t, true)
				return e.c.Ask(stun.MethodConnect, testturn.PeerAddr(&net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 0}))
			},
			want: 400},
		{section: "RFC 8656 §5", name: "Connect signed by another user: 441", nets: tcpOnly,
			send: func(t *testing.T, e *ruleEnv) *stun.Message {
				e.allocate(t, true)
				return e.other().Ask(stun.MethodConnect, testturn.PeerAddr(tcpPeer(t)))
			},
			want: 441, check: signedByOther},
	}
}

// sameAttrs reports whether a and b carry the same value of every attribute in types.
func sameAttrs(a, b *stun.Message, types ...stun.AttrType) bool {
	for _, at := range types {
		va, ea := a.Get(at)
		vb, eb := b.Get(at)
		if ea != nil || eb != nil || string(va) != string(vb) {
			return false
		}
	}
	return true
}
