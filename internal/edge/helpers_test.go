package edge_test

import (
	"bytes"
	"encoding/binary"
	"net"
	"testing"
	"time"

	"github.com/pion/stun/v4"

	"github.com/turnd/turnd/internal/edge"
	"github.com/turnd/turnd/internal/gate"
	"github.com/turnd/turnd/internal/mmsg"
	"github.com/turnd/turnd/internal/wire"
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

// strictPolicy makes every authenticated Allocate an answer or a rewrite,
// so a test that expects Pass shows the gate did not act on the packet.
func strictPolicy() *gate.Policy {
	return &gate.Policy{
		Keys:        staticKeys(),
		MaxLifetime: time.Minute,
		Alternates:  fixed(&net.UDPAddr{IP: net.IPv4(127, 0, 0, 9), Port: 3478}),
	}
}

// fixed is a Policy.Alternates that always offers alts.
func fixed(alts ...*net.UDPAddr) func() []*net.UDPAddr {
	if len(alts) == 0 {
		return nil
	}
	return func() []*net.UDPAddr { return alts }
}

// mustPacketConn is Edge.PacketConn or a failed test.
func mustPacketConn(tb testing.TB, inner *net.UDPConn, e *edge.Edge, hint *edge.PortHint, fast edge.FastPath) net.PacketConn {
	tb.Helper()
	sock, err := mmsg.Adopt(inner)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { sock.Close() })
	pc, err := e.PacketConn(sock, hint, fast)
	if err != nil {
		tb.Fatal(err)
	}
	return pc
}

// A REST username valid until 2100, so seeds signed with it stay valid.
const restUser = "4102444800:bob"

func restKeys() [][]byte {
	return [][]byte{
		auth.LongTermKey(restUser, testRealm, auth.RESTPassword("s1", restUser)),
		auth.LongTermKey(restUser, testRealm, auth.RESTPassword("s2", restUser)),
	}
}

// fuzzStore knows the static test user and the REST user of two secrets.
func fuzzStore() *auth.Store {
	return auth.New(auth.Options{Realm: testRealm, Users: map[string]string{testUser: testPass}, Secrets: []string{"s1", "s2"}})
}

// actingPolicy answers (draining) and rewrites (lifetime cap) whatever it can.
func actingPolicy() *gate.Policy {
	return &gate.Policy{Keys: fuzzStore().Keys, MultiKey: true, MaxLifetime: time.Minute, RefuseUnknownMethods: true,
		Alternates: fixed(&net.UDPAddr{IP: net.IPv4(127, 0, 0, 10), Port: 3478}, &net.UDPAddr{IP: net.ParseIP("::1"), Port: 3479})}
}

// fuzzSeeds are valid and nearly valid client packets.
func fuzzSeeds(tb testing.TB) [][]byte {
	rest := restKeys()[1]
	return [][]byte{
		nil,
		{0x40},
		bytes.Repeat([]byte{0xFF}, 24),
		channelData([]byte("hello"), false),
		channelData([]byte("hello"), true),
		sendIndication(tb, []byte("payload")),
		aliceAllocate(tb),
		aliceAllocate(tb, dontFragment(), lifetime(time.Hour)),
		aliceAllocate(tb, reservationToken([]byte("TOKEN-01"))),
		request(tb, stun.MethodAllocate, testUser, aliceKey(), false, transport(6)),
		request(tb, stun.MethodAllocate, testUser, aliceKey(), true, transport(17), stun.NewSoftware("after"), dontFragment()),
		request(tb, stun.MethodRefresh, testUser, aliceKey(), true, lifetime(time.Hour)),
		request(tb, stun.MethodRefresh, restUser, rest, true, lifetime(time.Hour)),
		request(tb, stun.MethodCreatePermission, restUser, rest, true, xorAddr{stun.AttrXORPeerAddress, net.IPv4(127, 0, 0, 2), 9}),
		request(tb, stun.MethodAllocate, restUser, rest, false, transport(6), dontFragment()),
		request(tb, methodConnectionBind, testUser, aliceKey(), true, stun.RawAttribute{Type: stun.AttrConnectionID, Value: []byte{0, 0, 0, 1}}),
		request(tb, stun.MethodAllocate, testUser, nil, false, transport(17)),
	}
}

// fingerprintOK is the gate's FINGERPRINT check as the framer's fuzz
// target needs it: true if pkt has no FINGERPRINT, is not RFC 8489 STUN, or
// its FINGERPRINT matches; the gate drops the others unanswered.
func fingerprintOK(pkt []byte) bool {
	a := wire.Walk(pkt)
	for a.Next() {
		if a.Type() == wire.AttrFingerprint {
			return binary.BigEndian.Uint32(pkt[4:8]) != wire.MagicCookie || wire.FingerprintOK(pkt, &a)
		}
	}
	return true
}
