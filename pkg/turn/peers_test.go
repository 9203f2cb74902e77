package turn_test

import (
	"net/netip"
	"slices"
	"testing"

	"github.com/pion/stun/v4"

	"github.com/turnd/turnd/pkg/turn"
)

// denied is the peer Policy.Peer refuses in these tests.
var denied = netip.MustParseAddr("192.0.2.66")

// peerEnv is an env whose policy refuses denied, with caps of two
// permissions and two channels, and a client holding an IPv4 allocation.
func peerEnv(t *testing.T) (*env, func(method stun.Method, s ...stun.Setter) *stun.Message) {
	e := newEnv(t, func(p *turn.Policy) {
		p.Peer = func(ap netip.AddrPort) bool { return ap.Addr() != denied }
		p.PermissionsPerAllocation, p.ChannelsPerAllocation = 2, 2
	})
	c, _ := udpClient(1)
	e.allocate(t, c)
	return e, func(method stun.Method, s ...stun.Setter) *stun.Message {
		resp := e.do(t, c, e.build(t, method, aliceUser(), s...))
		if !signedWith(resp, aliceUser().key) {
			t.Error("answer not signed with the client's key")
		}
		return resp
	}
}

// TestCreatePermission: RFC 8656 §10.2 — 400 without a valid peer, 443 for
// a family the allocation lacks, 403 for a denied peer, 508 past the cap,
// all or none, and the route the fast path reads holds what was granted.
func TestCreatePermission(t *testing.T) {
	for _, tc := range []struct {
		name  string
		peers []stun.Setter
		code  int
		want  []string // the route's permissions after
	}{
		{"one peer", []stun.Setter{peerAttr("192.0.2.1:9")}, 0, []string{"192.0.2.1"}},
		{"two peers", []stun.Setter{peerAttr("192.0.2.1:9"), peerAttr("192.0.2.2:9")}, 0, []string{"192.0.2.1", "192.0.2.2"}},
		{"no XOR-PEER-ADDRESS: 400", nil, 400, nil},
		{"malformed XOR-PEER-ADDRESS: 400", []stun.Setter{rawAttr(stun.AttrXORPeerAddress, 0, 1)}, 400, nil},
		{"an IPv6 peer of an IPv4 allocation: 443", []stun.Setter{peerAttr("192.0.2.1:9"), peerAttr("[2001:db8::9]:9")}, 443, nil},
		{"a denied peer: 403, none installed", []stun.Setter{peerAttr("192.0.2.1:9"), peerAttr(denied.String() + ":9")}, 403, nil},
		{"past the cap: 508, none installed", []stun.Setter{peerAttr("192.0.2.1:9"), peerAttr("192.0.2.2:9"), peerAttr("192.0.2.3:9")}, 508, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, ask := peerEnv(t)
			resp := ask(stun.MethodCreatePermission, tc.peers...)
			if code, _ := codeOf(resp); code != tc.code {
				t.Fatalf("answered %d, want %d", code, tc.code)
			}
			a, _ := e.table.Get(clientTuple(1))
			var got []string
			for _, p := range a.Route.Permissions() {
				got = append(got, p.String())
			}
			slices.Sort(got)
			if !slices.Equal(got, tc.want) {
				t.Errorf("route permits %v, want %v", got, tc.want)
			}
		})
	}
	t.Run("refused peers are reported", func(t *testing.T) {
		e, ask := peerEnv(t)
		ask(stun.MethodCreatePermission, peerAttr(denied.String()+":9"))
		ask(stun.MethodCreatePermission, peerAttr("192.0.2.1:9"), peerAttr("192.0.2.2:9"), peerAttr("192.0.2.3:9"))
		if got := e.events.refusals(); !slices.Equal(got, []string{"CreatePermission peer_denied alice", "CreatePermission capacity alice"}) {
			t.Errorf("refusals %q", got)
		}
	})
}

// TestChannelBind: RFC 8656 §12.2 — the number range turnd keeps
// (0x4000-0x7FFF), the peer checks, conflicts, the caps, and the binding and
// its permission installed in one step where the fast path reads them.
func TestChannelBind(t *testing.T) {
	peer := peerAttr("192.0.2.1:4000")
	for _, tc := range []struct {
		name  string
		first []stun.Setter // a ChannelBind before, which must succeed
		attrs []stun.Setter
		code  int
	}{
		{name: "bound", attrs: []stun.Setter{channelAttr(0x4000), peer}},
		{name: "0x7FFF, kept for WebRTC clients", attrs: []stun.Setter{channelAttr(0x7FFF), peer}},
		{name: "refreshed", first: []stun.Setter{channelAttr(0x4000), peer}, attrs: []stun.Setter{channelAttr(0x4000), peer}},
		{name: "below 0x4000: 400", attrs: []stun.Setter{channelAttr(0x3FFF), peer}, code: 400},
		{name: "above 0x7FFF: 400", attrs: []stun.Setter{channelAttr(0x8000), peer}, code: 400},
		{name: "no CHANNEL-NUMBER: 400", attrs: []stun.Setter{peer}, code: 400},
		{name: "no XOR-PEER-ADDRESS: 400", attrs: []stun.Setter{channelAttr(0x4000)}, code: 400},
		{name: "peer port 0: 400", attrs: []stun.Setter{channelAttr(0x4000), peerAttr("192.0.2.1:0")}, code: 400},
		{name: "an IPv6 peer of an IPv4 allocation: 443", attrs: []stun.Setter{channelAttr(0x4000), peerAttr("[2001:db8::1]:4000")}, code: 443},
		{name: "a denied peer: 403", attrs: []stun.Setter{channelAttr(0x4000), peerAttr(denied.String() + ":4000")}, code: 403},
		{name: "the number bound to another peer: 400", first: []stun.Setter{channelAttr(0x4000), peer},
			attrs: []stun.Setter{channelAttr(0x4000), peerAttr("192.0.2.1:4001")}, code: 400},
		{name: "the peer bound to another number: 400", first: []stun.Setter{channelAttr(0x4000), peer},
			attrs: []stun.Setter{channelAttr(0x4001), peer}, code: 400},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, ask := peerEnv(t)
			if tc.first != nil && !isCode(ask(stun.MethodChannelBind, tc.first...), 0) {
				t.Fatal("first ChannelBind failed")
			}
			resp := ask(stun.MethodChannelBind, tc.attrs...)
			if code, _ := codeOf(resp); code != tc.code {
				t.Fatalf("answered %d, want %d", code, tc.code)
			}
			a, _ := e.table.Get(clientTuple(1))
			bound := len(a.Route.Channels())
			if want := map[bool]int{true: 1, false: 0}[tc.code == 0 || tc.first != nil]; bound != want {
				t.Errorf("route holds %d channels, want %d", bound, want)
			}
			grants := 0 // every granted ChannelBind is told to Events
			if tc.first != nil {
				grants++
			}
			if tc.code == 0 {
				grants++
			}
			if got := e.events.channels(); len(got) != grants {
				t.Errorf("Events told of channels %q, want %d", got, grants)
			}
			if tc.code == 0 && !a.Route.Permitted(netip.MustParseAddr("192.0.2.1")) {
				t.Error("the channel's peer has no permission")
			}
		})
	}
	t.Run("past the channel cap: 508", func(t *testing.T) {
		_, ask := peerEnv(t)
		for i, p := range []string{"192.0.2.1:1", "192.0.2.1:2"} {
			if !isCode(ask(stun.MethodChannelBind, channelAttr(0x4000+uint16(i)), peerAttr(p)), 0) {
				t.Fatal("ChannelBind within the cap failed")
			}
		}
		if resp := ask(stun.MethodChannelBind, channelAttr(0x4002), peerAttr("192.0.2.1:3")); !isCode(resp, 508) {
			t.Errorf("third channel answered %v", resp.Type)
		}
	})
	t.Run("past the permission cap: 508", func(t *testing.T) {
		_, ask := peerEnv(t)
		if !isCode(ask(stun.MethodCreatePermission, peerAttr("192.0.2.8:1"), peerAttr("192.0.2.9:1")), 0) {
			t.Fatal("permissions within the cap failed")
		}
		if resp := ask(stun.MethodChannelBind, channelAttr(0x4000), peerAttr("192.0.2.1:3")); !isCode(resp, 508) {
			t.Errorf("a channel needing a third permission answered %v", resp.Type)
		}
	})
}

// TestSend: RFC 8656 §11.2 — the fast path relays Send indications; one
// that reaches the handler had no allocation or no permission, and is
// discarded unanswered, counted. Other indications are dropped too.
func TestSend(t *testing.T) {
	e := newEnv(t)
	c, l := udpClient(1)
	send := raw(t, stun.TransactionID, stun.NewType(stun.MethodSend, stun.ClassIndication), peerAttr("192.0.2.1:9"),
		rawAttr(stun.AttrData, 'x'), stun.Fingerprint)
	data := raw(t, stun.TransactionID, stun.NewType(stun.MethodData, stun.ClassIndication), stun.Fingerprint)
	response := raw(t, stun.TransactionID, stun.BindingSuccess)
	for _, pkt := range [][]byte{send, data, response} {
		if got := e.serve(t, c, l, pkt); len(got) != 0 {
			t.Fatalf("answered %v", got[0].Type)
		}
	}
	if got := e.events.drops(); !slices.Equal(got, []string{"send", "indication", "indication"}) {
		t.Errorf("drops %q", got)
	}
}
