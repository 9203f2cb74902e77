package gate_test

import (
	"bytes"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/pion/stun/v4"

	"github.com/turnd/turnd/internal/gate"
	"github.com/turnd/turnd/internal/stuntest"
)

// The shared packet builders, under the names this package's tests use.
const (
	testRealm = stuntest.Realm
	testUser  = stuntest.User
	testPass  = stuntest.Pass
	testNonce = stuntest.Nonce

	methodConnectionBind = stuntest.MethodConnectionBind
)

var (
	aliceKey         = stuntest.AliceKey
	staticKeys       = stuntest.StaticKeys
	restKeys         = stuntest.RestKeys
	fuzzStore        = stuntest.FuzzStore
	request          = stuntest.Request
	aliceAllocate    = stuntest.AliceAllocate
	transport        = stuntest.Transport
	lifetime         = stuntest.Lifetime
	dontFragment     = stuntest.DontFragment
	reservationToken = stuntest.ReservationToken
	channelData      = stuntest.ChannelData
	sendIndication   = stuntest.SendIndication
	xorAddr          = stuntest.XORAddr
	decode           = stuntest.Decode
	checkSigned      = stuntest.CheckSigned
	errorCode        = stuntest.ErrorCode
	fuzzSeeds        = stuntest.FuzzSeeds
)

// Addresses as the gate sees them; nothing is sent to them.
func clientAddr() *net.UDPAddr { return &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 50000} }
func localAddr() *net.UDPAddr  { return &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 3478} }

// streamClientAddr is a TCP or TLS client, for the requests RFC 6062 keeps to those.
func streamClientAddr() *net.TCPAddr { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 50000} }

// attrTypes lists a message's attribute types in order.
func attrTypes(m *stun.Message) []stun.AttrType {
	var ts []stun.AttrType
	for _, a := range m.Attributes {
		ts = append(ts, a.Type)
	}
	return ts
}

// sent is one packet a responder was asked to send.
type sent struct {
	b  []byte
	to net.Addr
}

// responder is a gate.Responder that records replies.
type responder struct {
	mu      sync.Mutex
	packets []sent
}

func (r *responder) WriteTo(b []byte, to net.Addr) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.packets = append(r.packets, sent{append([]byte(nil), b...), to})
	return len(b), nil
}

func (r *responder) sent() []sent {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]sent(nil), r.packets...)
}

// onlyReply returns the single reply r recorded, decoded.
func (r *responder) onlyReply(tb testing.TB) *stun.Message {
	tb.Helper()
	got := r.sent()
	if len(got) != 1 {
		tb.Fatalf("replies = %d, want 1", len(got))
	}
	return decode(tb, got[0].b)
}

// recorder counts hook calls.
type recorder struct {
	mu         sync.Mutex
	redirected []string // "user alternate"
	refused    []string
}

func (h *recorder) hooks(accepting bool) gate.Hooks {
	return gate.Hooks{
		Accepting: func() bool { return accepting },
		Redirected: func(user string, alt *net.UDPAddr) {
			h.mu.Lock()
			h.redirected = append(h.redirected, user+" "+alt.String())
			h.mu.Unlock()
		},
		TCPRefused: func(user string) {
			h.mu.Lock()
			h.refused = append(h.refused, user)
			h.mu.Unlock()
		},
	}
}

func (h *recorder) calls() (redirected, refused []string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.redirected...), append([]string(nil), h.refused...)
}

// strictPolicy makes every authenticated Allocate an answer or a rewrite,
// so a test that expects Pass shows the gate did not act on the packet.
func strictPolicy() *gate.Policy {
	return &gate.Policy{
		Keys:        staticKeys(),
		MaxLifetime: time.Minute,
		Alternates:  fixed(&net.UDPAddr{IP: net.IPv4(127, 0, 0, 9), Port: 3478}),
	}
}

// mustPass asserts the gate left pkt alone and sent nothing.
func mustPass(tb testing.TB, g *gate.Gate, pkt []byte) {
	tb.Helper()
	r := &responder{}
	in := append([]byte(nil), pkt...)
	out, v := g.Inspect(pkt, clientAddr(), localAddr(), r)
	if v != gate.Pass || out != nil {
		tb.Errorf("Inspect = (%x, %v), want (nil, Pass)", out, v)
	}
	if n := len(r.sent()); n != 0 {
		tb.Errorf("gate sent %d replies, want none", n)
	}
	if !bytes.Equal(pkt, in) {
		tb.Errorf("Inspect modified its input")
	}
}

// fixed is a Policy.Alternates that always offers alts.
func fixed(alts ...*net.UDPAddr) func() []*net.UDPAddr {
	if len(alts) == 0 {
		return nil
	}
	return func() []*net.UDPAddr { return alts }
}
