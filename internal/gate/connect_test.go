package gate_test

import (
	"net"
	"net/netip"
	"testing"

	"github.com/pion/stun/v4"

	"github.com/turnd/turnd/internal/gate"
)

// connectPolicy is a server whose TCP client holds an RFC 6062 allocation
// whose pending Connects are at the relay's cap when full; udpAlloc makes it
// a UDP allocation instead.
func connectPolicy(held, udpAlloc, full bool) *gate.Policy {
	own := netip.MustParseAddrPort("127.0.0.1:3478")
	return &gate.Policy{
		Keys:           staticKeys(),
		TCPAllocations: true,
		HasAllocation:  func(net.Addr, net.Addr) bool { return held },
		TCPRelay:       func(net.Addr, net.Addr) (bool, bool) { return full, !udpAlloc },
		OwnAddress:     func(a netip.AddrPort) bool { return a == own },
		PeerAllowed:    func(ip net.IP) bool { return !ip.Equal(net.IPv4(10, 0, 0, 1)) },
	}
}

func peer(ip string, port int) stun.Setter {
	return xorAddr(stun.AttrXORPeerAddress, net.ParseIP(ip), port)
}

// TestRFC6062Requests: the gate answers the RFC 6062 requests pion would
// dial from the wrong loop, let through, or leave unanswered; what it lets
// through is pion's to answer.
func TestRFC6062Requests(t *testing.T) {
	connect := func(p stun.Setter) []byte { return request(t, stun.MethodConnect, testUser, aliceKey(), true, p) }
	bind := request(t, stun.MethodConnectionBind, testUser, aliceKey(), true,
		stun.RawAttribute{Type: stun.AttrConnectionID, Value: []byte{0, 0, 0, 1}})
	tcpAllocate := func(extra ...stun.Setter) []byte {
		return request(t, stun.MethodAllocate, testUser, aliceKey(), true, append([]stun.Setter{transport(6)}, extra...)...)
	}
	good := peer("192.0.2.1", 80)
	tcp, udp := net.Addr(streamClientAddr()), net.Addr(clientAddr())
	tests := []struct {
		name   string
		rule   string
		policy *gate.Policy
		src    net.Addr
		pkt    []byte
		want   stun.ErrorCode // 0: passed to pion
	}{
		{"Connect over UDP", "RFC 6062 §5.2", connectPolicy(true, true, false), udp, connect(good), stun.CodeBadRequest},
		{"ConnectionBind over UDP", "RFC 6062 §5.4", connectPolicy(false, true, false), udp, bind, stun.CodeBadRequest},
		{"Connect without allocation", "RFC 6062 §5.2", connectPolicy(false, false, false), tcp, connect(good), stun.CodeAllocMismatch},
		{"Connect on a UDP allocation", "RFC 6062 §5.2", connectPolicy(true, true, false), tcp, connect(good), stun.CodeBadRequest},
		{"Connect with TCP relays off", "relay.tcp_allocations", func() *gate.Policy {
			p := connectPolicy(true, false, false)
			p.TCPAllocations = false
			return p
		}(), tcp, connect(good), stun.CodeForbidden},
		{"Connect to turnd itself", "RFC 6062 §5.2 403", connectPolicy(true, false, false), tcp, connect(peer("127.0.0.1", 3478)), stun.CodeForbidden},
		{"Connect to a denied peer", "RFC 6062 §5.2 403", connectPolicy(true, false, false), tcp, connect(peer("10.0.0.1", 80)), stun.CodeForbidden},
		{"Connect past the pending bound", "508 capacity", connectPolicy(true, false, true), tcp, connect(good), stun.CodeInsufficientCapacity},
		{"Connect", "", connectPolicy(true, false, false), tcp, connect(good), 0},
		{"ConnectionBind on a control connection", "RFC 6062 §5.4", connectPolicy(true, false, false), tcp, bind, stun.CodeBadRequest},
		{"ConnectionBind on a new connection", "", connectPolicy(false, false, false), tcp, bind, 0},
		{"TCP Allocate over UDP", "RFC 6062 §5.1", connectPolicy(false, false, false), udp, tcpAllocate(), stun.CodeBadRequest},
		{"TCP Allocate with EVEN-PORT", "RFC 6062 §5.1", connectPolicy(false, false, false), tcp,
			tcpAllocate(stun.RawAttribute{Type: stun.AttrEvenPort, Value: []byte{0}}), stun.CodeBadRequest},
		{"TCP Allocate with DONT-FRAGMENT", "RFC 6062 §5.1", connectPolicy(false, false, false), tcp, tcpAllocate(dontFragment()), stun.CodeBadRequest},
		{"TCP Allocate with RESERVATION-TOKEN", "RFC 6062 §5.1", connectPolicy(false, false, false), tcp,
			tcpAllocate(reservationToken([]byte("12345678"))), stun.CodeBadRequest},
		{"TCP Allocate", "", connectPolicy(false, false, false), tcp, tcpAllocate(), 0},
		{"unauthenticated Connect over UDP", "pion answers 401", connectPolicy(true, true, false), udp,
			request(t, stun.MethodConnect, testUser, nil, true, good), 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := gate.New(tc.policy, gate.Hooks{Accepting: func() bool { return true }})
			r := &responder{}
			out, v := g.Inspect(tc.pkt, tc.src, localAddr(), r)
			if tc.want == 0 {
				if v != gate.Pass || out != nil || len(r.sent()) != 0 {
					t.Fatalf("Inspect = (%x, %v) with %d replies, want a plain Pass", out, v, len(r.sent()))
				}
				return
			}
			if v != gate.Answered {
				t.Fatalf("%s: verdict %v, want Answered with %d", tc.rule, v, tc.want)
			}
			reply := r.onlyReply(t)
			checkSigned(t, reply, aliceKey())
			if code := errorCode(t, reply); code != tc.want {
				t.Errorf("%s: code %d, want %d", tc.rule, code, tc.want)
			}
			if reply.Type.Method != decode(t, tc.pkt).Type.Method || reply.TransactionID != decode(t, tc.pkt).TransactionID {
				t.Errorf("reply %v is not an answer to the request", reply.Type)
			}
		})
	}
}
