package gate_test

import (
	"bytes"
	"encoding/binary"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/pion/stun/v4"

	"github.com/turnd/turnd/internal/gate"
	"github.com/turnd/turnd/pkg/auth"
)

// Credentials of the one static user most tests sign with.
const (
	testRealm = "turnd.test"
	testUser  = "alice"
	testPass  = "alice-password"
	testNonce = "nonce-0123456789"
)

// Methods pion/stun does not name (RFC 6062 §6.1).
const methodConnectionBind stun.Method = 0x000B

// aliceKey is the long-term key the static user signs with.
func aliceKey() []byte { return auth.LongTermKey(testUser, testRealm, testPass) }

// staticKeys resolves only the static test user, like turnd's auth.Store.
func staticKeys() func(username, realm string) (string, [][]byte, error) {
	return auth.New(auth.Options{Realm: testRealm, Users: map[string]string{testUser: testPass}}).Keys
}

// Addresses as the gate sees them; nothing is sent to them.
func clientAddr() *net.UDPAddr { return &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 50000} }
func localAddr() *net.UDPAddr  { return &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 3478} }

// streamClientAddr is a TCP or TLS client, for the requests RFC 6062 keeps to those.
func streamClientAddr() *net.TCPAddr { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 50000} }

// request builds a STUN request of method carrying USERNAME user, REALM,
// NONCE and extra; with key it is signed with MESSAGE-INTEGRITY, and with
// fingerprint it ends in FINGERPRINT.
func request(tb testing.TB, method stun.Method, user string, key []byte, fingerprint bool, extra ...stun.Setter) []byte {
	tb.Helper()
	setters := []stun.Setter{
		stun.TransactionID,
		stun.NewType(method, stun.ClassRequest),
		stun.NewUsername(user),
		stun.NewRealm(testRealm),
		stun.NewNonce(testNonce),
	}
	setters = append(setters, extra...)
	if key != nil {
		setters = append(setters, stun.MessageIntegrity(key))
	}
	if fingerprint {
		setters = append(setters, stun.Fingerprint)
	}
	m, err := stun.Build(setters...)
	if err != nil {
		tb.Fatalf("build request: %v", err)
	}
	return m.Raw
}

// aliceAllocate is an Allocate for UDP signed by the static user.
func aliceAllocate(tb testing.TB, extra ...stun.Setter) []byte {
	tb.Helper()
	return request(tb, stun.MethodAllocate, testUser, aliceKey(), true, append([]stun.Setter{transport(17)}, extra...)...)
}

func transport(proto byte) stun.Setter {
	return stun.RawAttribute{Type: stun.AttrRequestedTransport, Value: []byte{proto, 0, 0, 0}}
}

func lifetime(d time.Duration) stun.Setter {
	v := make([]byte, 4)
	binary.BigEndian.PutUint32(v, uint32(d/time.Second))
	return stun.RawAttribute{Type: stun.AttrLifetime, Value: v}
}

func dontFragment() stun.Setter { return stun.RawAttribute{Type: stun.AttrDontFragment} }

func reservationToken(tok []byte) stun.Setter {
	return stun.RawAttribute{Type: stun.AttrReservationToken, Value: tok}
}

// channelData is a ChannelData message on channel 0x4000 carrying payload,
// padded to four bytes when padded (as on streams, RFC 8656 §12.5).
func channelData(payload []byte, padded bool) []byte {
	b := binary.BigEndian.AppendUint16(nil, 0x4000)
	b = binary.BigEndian.AppendUint16(b, uint16(len(payload)))
	b = append(b, payload...)
	for padded && len(b)%4 != 0 {
		b = append(b, 0)
	}
	return b
}

// sendIndication is a Send indication to a peer (no integrity, as clients send them).
func sendIndication(tb testing.TB, payload []byte) []byte {
	tb.Helper()
	m, err := stun.Build(stun.TransactionID, stun.NewType(stun.MethodSend, stun.ClassIndication),
		xorAddr{stun.AttrXORPeerAddress, net.IPv4(127, 0, 0, 2), 9},
		stun.RawAttribute{Type: stun.AttrData, Value: payload})
	if err != nil {
		tb.Fatalf("build send indication: %v", err)
	}
	return m.Raw
}

// xorAddr sets an XOR-encoded address attribute of type t.
type xorAddr struct {
	t    stun.AttrType
	ip   net.IP
	port int
}

func (a xorAddr) AddTo(m *stun.Message) error {
	return stun.XORMappedAddress{IP: a.ip, Port: a.port}.AddToAs(m, a.t)
}

// decode parses a STUN message or fails the test.
func decode(tb testing.TB, b []byte) *stun.Message {
	tb.Helper()
	m := &stun.Message{Raw: append([]byte(nil), b...)}
	if err := m.Decode(); err != nil {
		tb.Fatalf("decode %x: %v", b, err)
	}
	return m
}

// checkSigned asserts m carries MESSAGE-INTEGRITY valid under key and a valid FINGERPRINT.
func checkSigned(tb testing.TB, m *stun.Message, key []byte) {
	tb.Helper()
	if err := stun.MessageIntegrity(key).Check(m); err != nil {
		tb.Errorf("MESSAGE-INTEGRITY of %v does not verify: %v", m, err)
	}
	if err := stun.Fingerprint.Check(m); err != nil {
		tb.Errorf("FINGERPRINT of %v does not verify: %v", m, err)
	}
}

// errorCode returns the ERROR-CODE of an error response.
func errorCode(tb testing.TB, m *stun.Message) stun.ErrorCode {
	tb.Helper()
	var ec stun.ErrorCodeAttribute
	if err := ec.GetFrom(m); err != nil {
		tb.Fatalf("no ERROR-CODE in %v: %v", m, err)
	}
	return ec.Code
}

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
