package gate_test

import (
	"bytes"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/pion/stun/v4"

	"github.com/turnd/turnd/internal/gate"
)

// TestInspectPassesNonRequests checks that everything but an authenticated
// request reaches pion untouched, even under a policy that would act on an
// authenticated Allocate.
func TestInspectPassesNonRequests(t *testing.T) {
	allocate := aliceAllocate(t, dontFragment())
	badCookie := append([]byte(nil), allocate...)
	badCookie[4] ^= 0xFF
	truncated := allocate[:len(allocate)-8]

	success, err := stun.Build(stun.TransactionID, stun.NewType(stun.MethodAllocate, stun.ClassSuccessResponse),
		stun.MessageIntegrity(aliceKey()), stun.Fingerprint)
	if err != nil {
		t.Fatal(err)
	}
	errResp, err := stun.Build(stun.TransactionID, stun.NewType(stun.MethodAllocate, stun.ClassErrorResponse),
		stun.CodeUnauthorized, stun.MessageIntegrity(aliceKey()), stun.Fingerprint)
	if err != nil {
		t.Fatal(err)
	}
	dataInd, err := stun.Build(stun.TransactionID, stun.NewType(stun.MethodData, stun.ClassIndication),
		xorAddr(stun.AttrXORPeerAddress, net.IPv4(127, 0, 0, 2), 9), stun.RawAttribute{Type: stun.AttrData, Value: []byte("hi")})
	if err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name string
		pkt  []byte
	}{
		{"empty", nil},
		{"one byte", []byte{0x00}},
		{"19-byte STUN header", allocate[:19]},
		{"ChannelData", channelData([]byte("hello"), false)},
		{"ChannelData padded", channelData([]byte("hello"), true)},
		{"ChannelData header only", channelData(nil, false)},
		{"garbage 0xFF", bytes.Repeat([]byte{0xFF}, 64)},
		{"garbage 0x80", append([]byte{0x80}, allocate[1:]...)},
		{"Send indication", sendIndication(t, []byte("payload"))},
		{"Data indication", dataInd.Raw},
		{"Allocate success response", success.Raw},
		{"Allocate error response", errResp.Raw},
		{"signed Binding request", request(t, stun.MethodBinding, testUser, aliceKey(), true)},
		{"signed CreatePermission without MultiKey", request(t, stun.MethodCreatePermission, testUser, aliceKey(), true)},
		{"Allocate with bad magic cookie", badCookie},
		{"Allocate shorter than its length", truncated},
		{"Allocate header claiming 64 KiB", append([]byte{0x00, 0x03, 0xFF, 0xFC}, allocate[4:20]...)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := &recorder{}
			mustPass(t, gate.New(strictPolicy(), h.hooks(false)), tc.pkt)
			if r, f := h.calls(); len(r)+len(f) != 0 {
				t.Errorf("hooks called: redirected %v, refused %v", r, f)
			}
		})
	}
}

// TestInspectUnauthenticatedPasses checks that the gate acts only on a
// verified MESSAGE-INTEGRITY: everything else is pion's to answer (400/401).
func TestInspectUnauthenticatedPasses(t *testing.T) {
	wrongKey := []byte("not alice's key")
	extra := []stun.Setter{transport(6), dontFragment(), lifetime(24 * time.Hour)}
	corrupted := request(t, stun.MethodAllocate, testUser, aliceKey(), false, extra...)
	corrupted[len(corrupted)-1] ^= 1 // last byte of the HMAC

	noUser, err := stun.Build(stun.TransactionID, stun.NewType(stun.MethodAllocate, stun.ClassRequest),
		stun.NewRealm(testRealm), stun.NewNonce(testNonce), transport(6), stun.MessageIntegrity(aliceKey()))
	if err != nil {
		t.Fatal(err)
	}
	noRealm, err := stun.Build(stun.TransactionID, stun.NewType(stun.MethodAllocate, stun.ClassRequest),
		stun.NewUsername(testUser), stun.NewNonce(testNonce), transport(6), stun.MessageIntegrity(aliceKey()))
	if err != nil {
		t.Fatal(err)
	}

	failing := func(string, string) (string, [][]byte, error) { return "", nil, errors.New("unknown user") }
	tests := []struct {
		name string
		keys func(string, string) (string, [][]byte, error)
		pkt  []byte
	}{
		{"no MESSAGE-INTEGRITY, Refresh", staticKeys(), request(t, stun.MethodRefresh, testUser, nil, false, lifetime(24*time.Hour))},
		{"wrong password", staticKeys(), request(t, stun.MethodAllocate, testUser, wrongKey, true, extra...)},
		{"corrupted HMAC", staticKeys(), corrupted},
		{"unknown user", staticKeys(), request(t, stun.MethodAllocate, "mallory", aliceKey(), true, extra...)},
		{"Keys error", failing, request(t, stun.MethodAllocate, testUser, aliceKey(), true, extra...)},
		{"no Keys function", nil, request(t, stun.MethodAllocate, testUser, aliceKey(), true, extra...)},
		{"no USERNAME", staticKeys(), noUser.Raw},
		{"no REALM", staticKeys(), noRealm.Raw},
		{"wrong password on Refresh", staticKeys(), request(t, stun.MethodRefresh, testUser, wrongKey, true, lifetime(24*time.Hour))},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := strictPolicy()
			p.Keys = tc.keys
			g := gate.New(p, (&recorder{}).hooks(false))
			mustPass(t, g, tc.pkt)
			if g.TakeDontFragment(clientAddr(), localAddr()) {
				t.Error("DONT-FRAGMENT recorded for an unauthenticated request")
			}
		})
	}
}

// TestInspectHotPathDoesNotAllocate guards the per-packet cost: ChannelData
// and indications must cost a two-byte look.
func TestInspectHotPathDoesNotAllocate(t *testing.T) {
	tests := []struct {
		name string
		pkt  []byte
	}{
		{"ChannelData", channelData(make([]byte, 160), false)},
		{"Send indication", sendIndication(t, make([]byte, 160))},
	}
	g := gate.New(strictPolicy(), gate.Hooks{Accepting: func() bool { return false }})
	src, local, r := clientAddr(), localAddr(), &responder{}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var v gate.Verdict
			allocs := testing.AllocsPerRun(1000, func() { _, v = g.Inspect(tc.pkt, src, local, r) })
			if allocs != 0 {
				t.Errorf("Inspect allocated %.1f times per packet, want 0", allocs)
			}
			if v != gate.Pass {
				t.Errorf("verdict %v, want Pass", v)
			}
		})
	}
}

// BenchmarkInspect measures the per-packet cost (run with -benchmem: any
// allocation on the ChannelData path is a regression).
func BenchmarkInspect(b *testing.B) {
	g := gate.New(strictPolicy(), gate.Hooks{Accepting: func() bool { return true }})
	src, local, r := clientAddr(), localAddr(), &responder{}
	for _, bc := range []struct {
		name string
		pkt  []byte
	}{
		{"ChannelData", channelData(make([]byte, 160), false)},
		{"SendIndication", sendIndication(b, make([]byte, 160))},
		{"SignedAllocate", aliceAllocate(b)},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				g.Inspect(bc.pkt, src, local, r)
			}
		})
	}
}

// TestBindingAlwaysCountsAsUnauthenticated: a Binding request carrying a
// (junk) MESSAGE-INTEGRITY is still rate-limited: nothing checks it.
func TestBindingAlwaysCountsAsUnauthenticated(t *testing.T) {
	p := strictPolicy()
	p.UnauthenticatedRate = 1 // burst 2
	var dropped int
	g := gate.New(p, gate.Hooks{RateLimited: func(net.Addr) { dropped++ }})
	m, err := stun.Build(stun.TransactionID, stun.BindingRequest, stun.MessageIntegrity([]byte("junk")))
	if err != nil {
		t.Fatal(err)
	}
	r := &responder{}
	verdicts := map[gate.Verdict]int{}
	for i := 0; i < 5; i++ {
		_, v := g.Inspect(m.Raw, clientAddr(), localAddr(), r)
		verdicts[v]++
	}
	if verdicts[gate.Pass] != 2 || dropped != 3 {
		t.Fatalf("verdicts %v, dropped %d: want 2 passed and 3 dropped", verdicts, dropped)
	}
}
