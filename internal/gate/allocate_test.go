package gate_test

import (
	"bytes"
	"encoding/binary"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/pion/stun/v4"

	"github.com/turnd/turnd/internal/gate"
)

// TestDrainingRedirects checks RFC 8656 §7.2 step 8 as turnd applies it:
// while draining, an authenticated Allocate gets a signed 300 Try Alternate,
// rotating through the alternates.
func TestDrainingRedirects(t *testing.T) {
	a := &net.UDPAddr{IP: net.IPv4(127, 0, 0, 10), Port: 3478}
	b := &net.UDPAddr{IP: net.IPv4(127, 0, 0, 11), Port: 3479}
	h := &recorder{}
	p := strictPolicy()
	p.Alternates = fixed(a, b)
	g := gate.New(p, h.hooks(false))

	for i, want := range []*net.UDPAddr{a, b, a} {
		r := &responder{}
		pkt := aliceAllocate(t)
		out, v := g.Inspect(pkt, clientAddr(), localAddr(), r)
		if v != gate.Answered || out != nil {
			t.Fatalf("Allocate %d: Inspect = (%x, %v), want (nil, Answered)", i, out, v)
		}
		if to := r.sent()[0].to.String(); to != clientAddr().String() {
			t.Errorf("Allocate %d: reply sent to %s, want the client %s", i, to, clientAddr())
		}
		reply := r.onlyReply(t)
		checkSigned(t, reply, aliceKey())
		if reply.TransactionID != decode(t, pkt).TransactionID {
			t.Errorf("Allocate %d: reply has another transaction ID", i)
		}
		if want := stun.NewType(stun.MethodAllocate, stun.ClassErrorResponse); reply.Type != want {
			t.Errorf("Allocate %d: reply type %v, want %v", i, reply.Type, want)
		}
		if code := errorCode(t, reply); code != stun.CodeTryAlternate {
			t.Errorf("Allocate %d: code %d, want 300", i, code)
		}
		var alt stun.AlternateServer
		if err := alt.GetFrom(reply); err != nil {
			t.Fatalf("Allocate %d: no ALTERNATE-SERVER: %v", i, err)
		}
		if !alt.IP.Equal(want.IP) || alt.Port != want.Port {
			t.Errorf("Allocate %d: ALTERNATE-SERVER %s:%d, want %s", i, alt.IP, alt.Port, want)
		}
	}
	redirected, refused := h.calls()
	wantCalls := []string{testUser + " " + a.String(), testUser + " " + b.String(), testUser + " " + a.String()}
	if !slices.Equal(redirected, wantCalls) || len(refused) != 0 {
		t.Errorf("hooks: redirected %q, refused %q; want redirected %q", redirected, refused, wantCalls)
	}
}

// TestNoRedirect lists the cases where an Allocate goes to pion: without
// alternates pion's quota handler answers 486 while draining.
func TestNoRedirect(t *testing.T) {
	alt := []*net.UDPAddr{{IP: net.IPv4(127, 0, 0, 10), Port: 3478}}
	tests := []struct {
		name       string
		accepting  func() bool
		alternates []*net.UDPAddr
		pkt        func(testing.TB) []byte
	}{
		{"draining without alternates", func() bool { return false }, nil, func(tb testing.TB) []byte { return aliceAllocate(tb) }},
		{"accepting", func() bool { return true }, alt, func(tb testing.TB) []byte { return aliceAllocate(tb) }},
		{"no Accepting hook", nil, alt, func(tb testing.TB) []byte { return aliceAllocate(tb) }},
		{"draining, Refresh", func() bool { return false }, alt, func(tb testing.TB) []byte {
			return request(tb, stun.MethodRefresh, testUser, aliceKey(), true, lifetime(time.Minute))
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := &recorder{}
			hooks := h.hooks(false)
			hooks.Accepting = tc.accepting
			g := gate.New(&gate.Policy{Keys: staticKeys(), Alternates: fixed(tc.alternates...)}, hooks)
			mustPass(t, g, tc.pkt(t))
			if r, _ := h.calls(); len(r) != 0 {
				t.Errorf("Redirected called: %v", r)
			}
		})
	}
}

// TestTCPAllocation checks RFC 8656 §7.2 step 3 for RFC 6062 relays.
func TestTCPAllocation(t *testing.T) {
	tests := []struct {
		name    string
		allowed bool
		proto   byte
		want    gate.Verdict
	}{
		{"TCP refused", false, 6, gate.Answered},
		{"TCP allowed", true, 6, gate.Pass},
		{"UDP while TCP refused", false, 17, gate.Pass},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := &recorder{}
			g := gate.New(&gate.Policy{Keys: staticKeys(), TCPAllocations: tc.allowed}, h.hooks(true))
			pkt := request(t, stun.MethodAllocate, testUser, aliceKey(), false, transport(tc.proto))
			r := &responder{}
			// Over TCP: RFC 6062 §5.1 wants a TCP relay asked for over TCP or TLS.
			out, v := g.Inspect(pkt, streamClientAddr(), localAddr(), r)
			if v != tc.want || out != nil {
				t.Fatalf("Inspect = (%x, %v), want (nil, %v)", out, v, tc.want)
			}
			_, refused := h.calls()
			if tc.want == gate.Pass {
				if len(r.sent()) != 0 || len(refused) != 0 {
					t.Errorf("replies %d, TCPRefused %v; want none", len(r.sent()), refused)
				}
				return
			}
			reply := r.onlyReply(t)
			checkSigned(t, reply, aliceKey())
			if code := errorCode(t, reply); code != stun.CodeUnsupportedTransProto {
				t.Errorf("code %d, want 442", code)
			}
			if reply.TransactionID != decode(t, pkt).TransactionID {
				t.Error("reply has another transaction ID")
			}
			if !slices.Equal(refused, []string{testUser}) {
				t.Errorf("TCPRefused calls %q, want [%q]", refused, testUser)
			}
		})
	}
}

// TestDontFragment checks that DONT-FRAGMENT is taken over by turnd: pion
// gets the request without it, re-signed, and the 5-tuple is remembered once.
func TestDontFragment(t *testing.T) {
	tests := []struct {
		name        string
		fingerprint bool
		extra       []stun.Setter
	}{
		{"with FINGERPRINT", true, []stun.Setter{transport(17), dontFragment(), lifetime(30 * time.Second)}},
		{"without FINGERPRINT", false, []stun.Setter{transport(17), dontFragment(), lifetime(30 * time.Second)}},
		{"DONT-FRAGMENT first", true, []stun.Setter{dontFragment(), transport(17), stun.NewSoftware("uclient")}},
		{"with EVEN-PORT", false, []stun.Setter{transport(17), stun.RawAttribute{Type: stun.AttrEvenPort, Value: []byte{0x80}}, dontFragment()}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := gate.New(&gate.Policy{Keys: staticKeys(), MaxLifetime: time.Hour}, gate.Hooks{})
			pkt := request(t, stun.MethodAllocate, testUser, aliceKey(), tc.fingerprint, tc.extra...)
			in := decode(t, pkt)
			r := &responder{}
			out, v := g.Inspect(pkt, clientAddr(), localAddr(), r)
			if v != gate.Rewrite {
				t.Fatalf("verdict %v, want Rewrite", v)
			}
			if len(r.sent()) != 0 {
				t.Errorf("gate replied to a rewritten request")
			}
			got := decode(t, out)
			if got.Contains(stun.AttrDontFragment) {
				t.Error("rewritten request still has DONT-FRAGMENT")
			}
			if got.Type != in.Type || got.TransactionID != in.TransactionID {
				t.Errorf("header changed: %v → %v", in, got)
			}
			if err := stun.MessageIntegrity(aliceKey()).Check(got); err != nil {
				t.Errorf("MESSAGE-INTEGRITY does not verify: %v", err)
			}
			if got.Contains(stun.AttrFingerprint) != tc.fingerprint {
				t.Errorf("FINGERPRINT present = %v, want %v", got.Contains(stun.AttrFingerprint), tc.fingerprint)
			}
			if tc.fingerprint {
				if err := stun.Fingerprint.Check(got); err != nil {
					t.Errorf("FINGERPRINT does not verify: %v", err)
				}
			}
			// Every other attribute survives, in order and byte for byte.
			for _, a := range in.Attributes {
				switch a.Type {
				case stun.AttrDontFragment, stun.AttrMessageIntegrity, stun.AttrFingerprint:
					continue
				}
				v, err := got.Get(a.Type)
				if err != nil || !bytes.Equal(v, a.Value) {
					t.Errorf("%v = %x (%v), want %x", a.Type, v, err, a.Value)
				}
			}
			wantTypes := slices.DeleteFunc(attrTypes(in), func(t stun.AttrType) bool { return t == stun.AttrDontFragment })
			if gotTypes := attrTypes(got); !slices.Equal(gotTypes, wantTypes) {
				t.Errorf("attributes %v, want %v", gotTypes, wantTypes)
			}

			if !g.TakeDontFragment(clientAddr(), localAddr()) {
				t.Error("TakeDontFragment = false, want true")
			}
			if g.TakeDontFragment(clientAddr(), localAddr()) {
				t.Error("second TakeDontFragment = true, want false")
			}
		})
	}
}

// TestDontFragmentIsPerFiveTuple checks that the DF flag is keyed on both ends.
func TestDontFragmentIsPerFiveTuple(t *testing.T) {
	g := gate.New(&gate.Policy{Keys: staticKeys()}, gate.Hooks{})
	if _, v := g.Inspect(aliceAllocate(t, dontFragment()), clientAddr(), localAddr(), &responder{}); v != gate.Rewrite {
		t.Fatalf("verdict %v, want Rewrite", v)
	}
	otherClient := &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 50001}
	otherLocal := &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 3479}
	if g.TakeDontFragment(otherClient, localAddr()) || g.TakeDontFragment(clientAddr(), otherLocal) {
		t.Error("DONT-FRAGMENT reported for another 5-tuple")
	}
	if !g.TakeDontFragment(clientAddr(), localAddr()) {
		t.Error("DONT-FRAGMENT lost")
	}
}

// TestLifetimeCap checks limits.max_lifetime on Allocate and Refresh.
func TestLifetimeCap(t *testing.T) {
	const limit = 10 * time.Minute
	tests := []struct {
		name     string
		method   stun.Method
		limit    time.Duration
		asked    time.Duration
		want     gate.Verdict
		wantLife time.Duration
	}{
		{"Allocate above", stun.MethodAllocate, limit, time.Hour, gate.Rewrite, limit},
		{"Allocate far above", stun.MethodAllocate, limit, 0xFFFFFFFF * time.Second, gate.Rewrite, limit},
		{"Allocate at", stun.MethodAllocate, limit, limit, gate.Pass, 0},
		{"Allocate below", stun.MethodAllocate, limit, time.Minute, gate.Pass, 0},
		{"Refresh above", stun.MethodRefresh, limit, limit + time.Second, gate.Rewrite, limit},
		{"Refresh at", stun.MethodRefresh, limit, limit, gate.Pass, 0},
		{"Refresh to delete", stun.MethodRefresh, limit, 0, gate.Pass, 0},
		{"no limit", stun.MethodAllocate, 0, 0xFFFFFFFF * time.Second, gate.Pass, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := gate.New(&gate.Policy{Keys: staticKeys(), MaxLifetime: tc.limit}, gate.Hooks{})
			extra := []stun.Setter{lifetime(tc.asked)}
			if tc.method == stun.MethodAllocate {
				extra = append(extra, transport(17))
			}
			pkt := request(t, tc.method, testUser, aliceKey(), true, extra...)
			if tc.want == gate.Pass {
				mustPass(t, g, pkt)
				return
			}
			out, v := g.Inspect(pkt, clientAddr(), localAddr(), &responder{})
			if v != tc.want {
				t.Fatalf("verdict %v, want %v", v, tc.want)
			}
			got := decode(t, out)
			checkSigned(t, got, aliceKey())
			life, err := got.Get(stun.AttrLifetime)
			if err != nil || len(life) != 4 {
				t.Fatalf("LIFETIME = %x (%v)", life, err)
			}
			if d := time.Duration(binary.BigEndian.Uint32(life)) * time.Second; d != tc.wantLife {
				t.Errorf("LIFETIME %v, want %v", d, tc.wantLife)
			}
			if len(out) != len(pkt) {
				t.Errorf("rewritten size %d, want %d (only LIFETIME's value changes)", len(out), len(pkt))
			}
			if g.TakeDontFragment(clientAddr(), localAddr()) {
				t.Error("DONT-FRAGMENT recorded though not asked for")
			}
		})
	}
}

// TestChannelBindToDeniedPeerIs403: the gate answers a signed 403 where pion
// would answer 401, and lets allowed peers through.
func TestChannelBindToDeniedPeerIs403(t *testing.T) {
	p := strictPolicy()
	p.PeerAllowed = func(ip net.IP) bool { return !ip.Equal(net.IPv4(169, 254, 169, 254)) }
	var refused []net.IP
	g := gate.New(p, gate.Hooks{PeerRefused: func(_ string, ip net.IP) { refused = append(refused, ip) }})
	chanNum := stun.RawAttribute{Type: stun.AttrChannelNumber, Value: []byte{0x40, 0x00, 0, 0}}
	for _, tc := range []struct {
		peer net.IP
		want gate.Verdict
	}{
		{net.IPv4(169, 254, 169, 254), gate.Answered},
		{net.IPv4(192, 0, 2, 80), gate.Pass},
	} {
		req := request(t, stun.MethodChannelBind, testUser, aliceKey(), true, chanNum,
			xorAddr(stun.AttrXORPeerAddress, tc.peer, 80))
		r := &responder{}
		if _, v := g.Inspect(req, clientAddr(), localAddr(), r); v != tc.want {
			t.Fatalf("peer %v: verdict %v, want %v", tc.peer, v, tc.want)
		}
		if tc.want == gate.Answered {
			resp := r.onlyReply(t)
			checkSigned(t, resp, aliceKey())
			if code := errorCode(t, resp); code != stun.CodeForbidden {
				t.Fatalf("reply code %d, want 403", code)
			}
		}
	}
	if len(refused) != 1 {
		t.Fatalf("PeerRefused called %d times, want 1", len(refused))
	}
}

// TestDrainingRedirectsUnauthenticated: while draining with alternates, the
// first, credential-less Allocate is answered 300 with ALTERNATE-SERVER and
// nothing of this server's (no NONCE, no REALM), so a client starts afresh
// at the alternate; the rotation is shared with signed redirects.
func TestDrainingRedirectsUnauthenticated(t *testing.T) {
	a := &net.UDPAddr{IP: net.IPv4(127, 0, 0, 10), Port: 3478}
	b := &net.UDPAddr{IP: net.IPv4(127, 0, 0, 11), Port: 3479}
	h := &recorder{}
	p := strictPolicy()
	p.Alternates = fixed(a, b)
	p.AlternateDomain = "turn.example.org" // over TLS only: not on UDP
	g := gate.New(p, h.hooks(false))
	for i, want := range []*net.UDPAddr{a, b, a} {
		pkt := request(t, stun.MethodAllocate, testUser, nil, i != 1, transport(17))
		r := &responder{}
		out, v := g.Inspect(pkt, clientAddr(), localAddr(), r)
		if v != gate.Answered || out != nil {
			t.Fatalf("Allocate %d: Inspect = (%x, %v), want (nil, Answered)", i, out, v)
		}
		reply := r.onlyReply(t)
		if reply.TransactionID != decode(t, pkt).TransactionID {
			t.Errorf("Allocate %d: reply has another transaction ID", i)
		}
		var ec stun.ErrorCodeAttribute
		if err := ec.GetFrom(reply); err != nil || ec.Code != stun.CodeTryAlternate || string(ec.Reason) != "Try Alternate" {
			t.Errorf("Allocate %d: ERROR-CODE %v (%v), want 300 Try Alternate", i, ec, err)
		}
		var alt stun.AlternateServer
		if err := alt.GetFrom(reply); err != nil || !alt.IP.Equal(want.IP) || alt.Port != want.Port {
			t.Errorf("Allocate %d: ALTERNATE-SERVER %s:%d (%v), want %s", i, alt.IP, alt.Port, err, want)
		}
		for _, at := range []stun.AttrType{stun.AttrNonce, stun.AttrRealm, stun.AttrMessageIntegrity, stun.AttrAlternateDomain} {
			if reply.Contains(at) {
				t.Errorf("Allocate %d: reply carries %v", i, at)
			}
		}
		if err := stun.Fingerprint.Check(reply); (err == nil) != (i != 1) {
			t.Errorf("Allocate %d: FINGERPRINT check %v, want one only if the request had one", i, err)
		}
	}
	if redirected, _ := h.calls(); len(redirected) != 3 {
		t.Errorf("Redirected called %d times, want 3", len(redirected))
	}
}

// TestUnauthenticatedNotRedirected lists when a credential-less Allocate
// still goes to pion (and its 401): accepting, no alternates, or an
// alternates list that resolved to nothing — the 486 path of a drain.
func TestUnauthenticatedNotRedirected(t *testing.T) {
	alt := &net.UDPAddr{IP: net.IPv4(127, 0, 0, 10), Port: 3478}
	empty := func() []*net.UDPAddr { return nil }
	tests := []struct {
		name       string
		accepting  bool
		alternates func() []*net.UDPAddr
	}{
		{"accepting", true, fixed(alt)},
		{"draining without alternates", false, nil},
		{"draining, no alternate left", false, empty},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := &recorder{}
			g := gate.New(&gate.Policy{Keys: staticKeys(), Alternates: tc.alternates}, h.hooks(tc.accepting))
			mustPass(t, g, request(t, stun.MethodAllocate, testUser, nil, false, transport(17)))
			if r, _ := h.calls(); len(r) != 0 {
				t.Errorf("Redirected called: %v", r)
			}
		})
	}
}

// TestAlternateOfTheClientsFamily: a redirect names an alternate of the
// client's address family while there is one, rotating among those, and
// one of the other family only when there is none; a loopback alternate is
// never offered to a client that is not on loopback, which could not reach
// it (with nothing else left, pion answers).
func TestAlternateOfTheClientsFamily(t *testing.T) {
	v4a := &net.UDPAddr{IP: net.IPv4(10, 0, 0, 1), Port: 3478}
	v4b := &net.UDPAddr{IP: net.IPv4(10, 0, 0, 2), Port: 3478}
	v6 := &net.UDPAddr{IP: net.ParseIP("fd00::1"), Port: 3478}
	lo4 := &net.UDPAddr{IP: net.IPv4(127, 0, 0, 2), Port: 3478}
	lo6 := &net.UDPAddr{IP: net.ParseIP("::1"), Port: 3478}
	public4 := &net.UDPAddr{IP: net.IPv4(198, 51, 100, 7), Port: 50000}
	public6 := &net.UDPAddr{IP: net.ParseIP("2001:db8::7"), Port: 50000}
	mapped := &net.UDPAddr{IP: net.ParseIP("::ffff:198.51.100.7"), Port: 50000}
	tests := []struct {
		name   string
		alts   []*net.UDPAddr
		client *net.UDPAddr
		want   []*net.UDPAddr // successive redirects; nil: pion answers
	}{
		{"IPv4 client, mixed list", []*net.UDPAddr{v6, v4a, v6, v4b}, public4, []*net.UDPAddr{v4a, v4a, v4b, v4b, v4a}},
		{"IPv4-mapped client is IPv4", []*net.UDPAddr{v6, v4a}, mapped, []*net.UDPAddr{v4a, v4a}},
		{"IPv6 client, mixed list", []*net.UDPAddr{v4a, v6, v4b}, public6, []*net.UDPAddr{v6, v6, v6}},
		{"IPv6 client, IPv4 only", []*net.UDPAddr{v4a, v4b}, public6, []*net.UDPAddr{v4a, v4b, v4a}},
		{"loopback skipped for a remote client", []*net.UDPAddr{lo4, v4a, lo6}, public4, []*net.UDPAddr{v4a, v4a, v4a}},
		{"only loopback, remote client", []*net.UDPAddr{lo4, lo6}, public4, nil},
		{"loopback offered to a loopback client", []*net.UDPAddr{lo4, v6}, clientAddr(), []*net.UDPAddr{lo4, lo4}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := strictPolicy()
			p.Alternates = fixed(tc.alts...)
			g := gate.New(p, (&recorder{}).hooks(false))
			for i := range max(len(tc.want), 2) {
				r := &responder{}
				pkt := request(t, stun.MethodAllocate, testUser, nil, true, transport(17))
				_, v := g.Inspect(pkt, tc.client, localAddr(), r)
				if tc.want == nil {
					if v != gate.Pass || len(r.sent()) != 0 {
						t.Fatalf("Allocate %d: verdict %v, %d replies; want it passed to pion", i, v, len(r.sent()))
					}
					continue
				}
				var alt stun.AlternateServer
				if err := alt.GetFrom(r.onlyReply(t)); err != nil {
					t.Fatalf("Allocate %d: no ALTERNATE-SERVER: %v", i, err)
				}
				if want := tc.want[i]; !alt.IP.Equal(want.IP) || alt.Port != want.Port {
					t.Errorf("Allocate %d: ALTERNATE-SERVER %s:%d, want %s", i, alt.IP, alt.Port, want)
				}
			}
		})
	}
}

// TestUserAllocateRate: past a user's burst of authenticated Allocates the
// gate answers a signed 486 itself, hooks it, and passes other users' on;
// 0 turns the limit off. The rate's clock stands still, so no token comes
// back however slowly the test runs.
func TestUserAllocateRate(t *testing.T) {
	p := strictPolicy()
	p.Alternates = nil
	p.UserAllocateRate = 2 // a burst of 4
	var limited []string
	stopped := time.Unix(1000, 0)
	g := gate.New(p, gate.Hooks{
		Accepting:           func() bool { return true },
		AllocateRateLimited: func(user string) { limited = append(limited, user) },
		Now:                 func() time.Time { return stopped },
	})
	for i := range 4 {
		if _, v := g.Inspect(aliceAllocate(t), clientAddr(), localAddr(), &responder{}); v == gate.Answered {
			t.Fatalf("Allocate %d of the burst answered by the gate", i)
		}
	}
	r := &responder{}
	if _, v := g.Inspect(aliceAllocate(t), clientAddr(), localAddr(), r); v != gate.Answered {
		t.Fatalf("Allocate past the burst: verdict %v, want Answered", v)
	}
	reply := r.onlyReply(t)
	checkSigned(t, reply, aliceKey())
	if code := errorCode(t, reply); code != stun.CodeAllocQuotaReached {
		t.Errorf("Allocate past the burst: %d, want 486", code)
	}
	if !slices.Equal(limited, []string{testUser}) {
		t.Errorf("AllocateRateLimited calls %q, want one for %s", limited, testUser)
	}
	p2 := *p
	p2.UserAllocateRate = 0
	g.SetPolicy(&p2)
	if _, v := g.Inspect(aliceAllocate(t), clientAddr(), localAddr(), &responder{}); v == gate.Answered {
		t.Error("with the rate set to 0 the gate still answered")
	}
}
