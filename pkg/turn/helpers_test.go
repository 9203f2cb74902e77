package turn_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/pion/stun/v4"

	"github.com/turnd/turnd/internal/auth"
	"github.com/turnd/turnd/internal/bindings"
	"github.com/turnd/turnd/internal/netaddr"
	"github.com/turnd/turnd/internal/traffic"
	"github.com/turnd/turnd/pkg/allocation"
	"github.com/turnd/turnd/pkg/turn"
)

const (
	realm    = "turnd.test"
	alice    = "alice"
	alicePW  = "alice-password"
	restUser = "4102444800:bob" // valid until 2100
)

// t0 is the fake clock's start.
var t0 = time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)

// clock is a fake clock a test moves by hand.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// events records what the handler reports.
type events struct {
	mu      sync.Mutex
	refused []string // "method reason user"
	dropped []string
	created []*allocation.Allocation
	bound   []string // "user number peer"
	ended   []string // "user reason"
}

func (e *events) Created(a *allocation.Allocation) {
	e.mu.Lock()
	e.created = append(e.created, a)
	e.mu.Unlock()
}

func (e *events) Ended(a *allocation.Allocation, why allocation.EndReason, _ traffic.Usage) {
	e.mu.Lock()
	e.ended = append(e.ended, a.User+" "+why.String())
	e.mu.Unlock()
}

func (e *events) ChannelBound(a *allocation.Allocation, number uint16, peer netip.AddrPort) {
	e.mu.Lock()
	e.bound = append(e.bound, fmt.Sprintf("%s %#x %v", a.User, number, peer))
	e.mu.Unlock()
}

func (e *events) channels() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.bound...)
}

func (e *events) endings() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.ended...)
}

func (e *events) Refused(method, reason, user string, _ netip.AddrPort) {
	e.mu.Lock()
	e.refused = append(e.refused, method+" "+reason+" "+user)
	e.mu.Unlock()
}

func (e *events) Dropped(reason string) {
	e.mu.Lock()
	e.dropped = append(e.dropped, reason)
	e.mu.Unlock()
}

func (e *events) drops() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.dropped...)
}

func (e *events) refusals() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.refused...)
}

// lane is a bindings.Lane that records what is written to it.
type lane struct {
	mu    sync.Mutex
	sent  [][]byte
	wrote chan struct{} // signalled (coalesced) on every write
}

func (l *lane) WriteToUDPAddrPort(b []byte, _ netip.AddrPort) (int, error) {
	l.mu.Lock()
	l.sent = append(l.sent, append([]byte(nil), b...))
	l.mu.Unlock()
	select {
	case l.wrote <- struct{}{}:
	default:
	}
	return len(b), nil
}

// take returns and forgets what was written.
func (l *lane) take() [][]byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.sent
	l.sent = nil
	return out
}

// env is a handler on a fake clock with the static user alice and the REST
// secrets s1 and s2.
type env struct {
	h      *turn.Handler
	table  *allocation.Table
	relays *relays
	clock  *clock
	nonces *auth.Nonces
	store  *auth.Store
	policy *turn.Policy
	events *events
}

func newEnv(t testing.TB, edit ...func(*turn.Policy)) *env {
	t.Helper()
	return newEnvWith(t, nil, edit...)
}

// newEnvWith is newEnv with the handler's options edited by opts (nil: none).
func newEnvWith(t testing.TB, opts func(*turn.Options), edit ...func(*turn.Policy)) *env {
	t.Helper()
	c := &clock{now: t0}
	n, err := auth.NewNonces(bytes.Repeat([]byte{7}, auth.NonceSecretLen), 0) // fixed: fuzz seeds stay valid
	if err != nil {
		t.Fatal(err)
	}
	s := auth.New(auth.Options{Realm: realm, Users: map[string]string{alice: alicePW, "carol": "carol-password"},
		Secrets: []string{"s1", "s2"}, Now: c.Now})
	p := &turn.Policy{Creds: s, DefaultLifetime: 10 * time.Minute, MaxLifetime: time.Hour,
		Families: bindings.Both, TCPAllocations: true}
	for _, e := range edit {
		e(p)
	}
	ev := &events{}
	var h *turn.Handler // the table's hooks call the handler built on it
	table := allocation.New(allocation.Limits{}, allocation.Hooks{
		Ended:       func(a *allocation.Allocation, why allocation.EndReason) { h.Ended(a, why) },
		FamilyEnded: func(a *allocation.Allocation, f bindings.Families, at netip.AddrPort) { h.FamilyEnded(a, f, at) },
		Unreserved:  func(r allocation.Reservation) { h.Unreserved(r) },
		ConnExpired: func(a *allocation.Allocation, id uint32) { h.ConnExpired(a, id) },
	})
	rel := newRelays()
	o := turn.Options{Table: table, Relays: rel, Nonces: n, Events: ev, Now: c.Now}
	if opts != nil {
		opts(&o)
	}
	h = turn.New(o, p)
	return &env{h: h, table: table, relays: rel, clock: c, nonces: n, store: s, policy: p, events: ev}
}

// udpClient is a client 5-tuple on a UDP lane, from the given last octet.
func udpClient(octet byte) (*bindings.Client, *lane) {
	l := &lane{wrote: make(chan struct{}, 1)}
	return &bindings.Client{Tuple: netaddr.FiveTuple{
		Client: netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 0, octet}), 50000),
		Server: netip.MustParseAddrPort("127.0.0.1:3478"),
	}, Lane: l}, l
}

// user is who signs a client's requests.
type user struct {
	name string
	key  []byte // nil: unsigned
}

func aliceUser() user { return user{alice, auth.LongTermKey(alice, realm, alicePW)} }

func restKey(secret string) []byte {
	return auth.LongTermKey(restUser, realm, auth.RESTPassword(secret, restUser))
}

// build makes a request of method signed by u with a nonce of e's, ending
// in FINGERPRINT.
func (e *env) build(t testing.TB, method stun.Method, u user, extra ...stun.Setter) []byte {
	t.Helper()
	s := []stun.Setter{stun.TransactionID, stun.NewType(method, stun.ClassRequest)}
	s = append(s, extra...)
	if u.key != nil {
		s = append(s, stun.NewUsername(u.name), stun.NewRealm(realm), stun.NewNonce(e.nonces.Issue(e.clock.Now())),
			stun.MessageIntegrity(u.key))
	}
	s = append(s, stun.Fingerprint)
	return raw(t, s...)
}

// raw builds a message of exactly the setters given.
func raw(t testing.TB, s ...stun.Setter) []byte {
	t.Helper()
	m, err := stun.Build(s...)
	if err != nil {
		t.Fatal(err)
	}
	return m.Raw
}

// serve hands pkt to the handler from c and returns the answers, decoded.
func (e *env) serve(t testing.TB, c *bindings.Client, l *lane, pkt []byte) []*stun.Message {
	t.Helper()
	e.h.Serve(pkt, c)
	var out []*stun.Message
	for _, b := range l.take() {
		m := &stun.Message{Raw: b}
		if err := m.Decode(); err != nil {
			t.Fatalf("answer does not decode: %v", err)
		}
		out = append(out, m)
	}
	return out
}

// ask serves pkt and returns its one answer, or fails.
func (e *env) ask(t testing.TB, c *bindings.Client, l *lane, pkt []byte) *stun.Message {
	t.Helper()
	got := e.serve(t, c, l, pkt)
	if len(got) != 1 {
		t.Fatalf("%d answers, want 1", len(got))
	}
	return got[0]
}

// codeOf is an answer's error code and reason; 0 for a success.
func codeOf(m *stun.Message) (int, string) {
	var ec stun.ErrorCodeAttribute
	if ec.GetFrom(m) != nil {
		return 0, ""
	}
	return int(ec.Code), string(ec.Reason)
}

// signedWith reports whether m's MESSAGE-INTEGRITY checks with key.
func signedWith(m *stun.Message, key []byte) bool {
	return stun.MessageIntegrity(key).Check(m) == nil
}

// attrTypes lists a message's attribute types in order.
func attrTypes(m *stun.Message) []stun.AttrType {
	var ts []stun.AttrType
	for _, a := range m.Attributes {
		ts = append(ts, a.Type)
	}
	return ts
}

// stream is a fake bindings.Stream: a TCP client connection.
type stream struct {
	lane
	idle  []bool
	piped io.ReadWriteCloser
}

func (s *stream) Write(b []byte) (int, error)  { return s.WriteToUDPAddrPort(b, netip.AddrPort{}) }
func (s *stream) TryWritev(_ [][]byte) bool    { return true }
func (s *stream) Idle(idle bool)               { s.idle = append(s.idle, idle) }
func (s *stream) Pipe(peer io.ReadWriteCloser) { s.piped = peer }
func (s *stream) Close() error                 { return nil }

// tcpClient is a client 5-tuple on a TCP connection, from the given last octet.
func tcpClient(octet byte) (*bindings.Client, *stream) {
	s := &stream{}
	return &bindings.Client{Tuple: netaddr.FiveTuple{
		Client: netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 0, octet}), 50000),
		Server: netip.MustParseAddrPort("127.0.0.1:3478"), TCP: true,
	}, Stream: s}, s
}

// answers is what a client was sent: a lane's, or a stream's.
type answers interface{ take() [][]byte }

// do serves pkt from c and returns its one answer, decoded, or fails.
func (e *env) do(t testing.TB, c *bindings.Client, pkt []byte) *stun.Message {
	t.Helper()
	e.h.Serve(pkt, c)
	var got [][]byte
	if c.Stream != nil {
		got = c.Stream.(*stream).take()
	} else {
		got = c.Lane.(*lane).take()
	}
	if len(got) != 1 {
		t.Fatalf("%d answers, want 1", len(got))
	}
	m := &stun.Message{Raw: got[0]}
	if err := m.Decode(); err != nil {
		t.Fatal(err)
	}
	return m
}

// allocate gives c an allocation signed by alice, with extra attributes,
// and returns the success.
func (e *env) allocate(t testing.TB, c *bindings.Client, extra ...stun.Setter) *stun.Message {
	t.Helper()
	resp := e.do(t, c, e.build(t, stun.MethodAllocate, aliceUser(), append([]stun.Setter{transportUDP()}, extra...)...))
	if code, reason := codeOf(resp); code != 0 {
		t.Fatalf("Allocate: %d %s", code, reason)
	}
	return resp
}

// relayedOf lists a success's XOR-RELAYED-ADDRESSes in order.
func relayedOf(t testing.TB, m *stun.Message) []netip.AddrPort {
	t.Helper()
	var out []netip.AddrPort
	for _, a := range m.Attributes {
		if a.Type != stun.AttrXORRelayedAddress {
			continue
		}
		var x stun.XORMappedAddress
		one := stun.Message{TransactionID: m.TransactionID, Attributes: stun.Attributes{a}}
		if err := x.GetFromAs(&one, stun.AttrXORRelayedAddress); err != nil {
			t.Fatal(err)
		}
		ip, _ := netip.AddrFromSlice(x.IP)
		out = append(out, netip.AddrPortFrom(ip.Unmap(), uint16(x.Port))) //nolint:gosec
	}
	return out
}

// lifetimeOf is a success's LIFETIME.
func lifetimeOf(t testing.TB, m *stun.Message) time.Duration {
	t.Helper()
	v, err := m.Get(stun.AttrLifetime)
	if err != nil || len(v) != 4 {
		t.Fatalf("no LIFETIME (%v)", err)
	}
	return time.Duration(binary.BigEndian.Uint32(v)) * time.Second
}

// lifetime is a LIFETIME attribute.
func lifetime(d time.Duration) stun.Setter {
	v := make([]byte, 4)
	binary.BigEndian.PutUint32(v, uint32(d/time.Second)) //nolint:gosec
	return stun.RawAttribute{Type: stun.AttrLifetime, Value: v}
}

// rawAttr is an attribute of type t with value v.
func rawAttr(t stun.AttrType, v ...byte) stun.Setter { return stun.RawAttribute{Type: t, Value: v} }

// peerAttr is an XOR-PEER-ADDRESS.
func peerAttr(ap string) stun.Setter {
	a := netip.MustParseAddrPort(ap)
	return xorPeer{a}
}

type xorPeer struct{ a netip.AddrPort }

func (p xorPeer) AddTo(m *stun.Message) error {
	x := stun.XORMappedAddress{IP: p.a.Addr().AsSlice(), Port: int(p.a.Port())}
	return x.AddToAs(m, stun.AttrXORPeerAddress)
}

// channelAttr is a CHANNEL-NUMBER attribute.
func channelAttr(n uint16) stun.Setter {
	return rawAttr(stun.AttrChannelNumber, byte(n>>8), byte(n), 0, 0)
}

// clientTuple is the 5-tuple of udpClient(octet).
func clientTuple(octet byte) netaddr.FiveTuple {
	c, _ := udpClient(octet)
	return c.Tuple
}

// connect has the TCP client control ask for a Connect to peer, and returns
// the dial the relay was handed, not yet done.
func (e *env) connect(t testing.TB, control *bindings.Client, peer string) connectCall {
	t.Helper()
	e.h.Serve(e.build(t, stun.MethodConnect, aliceUser(), peerAttr(peer)), control)
	call, err := e.relays.lastConnect()
	if err != nil {
		t.Fatal(err)
	}
	return call
}

// connectionID is a CONNECTION-ID attribute holding n (RFC 6062 §6.2.1).
func connectionID(n uint32) stun.Setter {
	return rawAttr(stun.AttrConnectionID, byte(n>>24), byte(n>>16), byte(n>>8), byte(n))
}
