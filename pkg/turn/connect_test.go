package turn_test

import (
	"encoding/binary"
	"errors"
	"net/netip"
	"testing"

	"github.com/pion/stun/v4"

	"github.com/turnd/turnd/internal/bindings"
	"github.com/turnd/turnd/pkg/turn"
)

// methodConnectionBind is RFC 6062's ConnectionBind (§6.1).
const methodConnectionBind stun.Method = 0x000B

// ownSocket is a listening socket of turnd's own, which Policy.Peer refuses.
var ownSocket = netip.MustParseAddrPort("127.0.0.1:3478")

// connectEnv is an env whose policy refuses turnd's own socket and 10.0.0.1,
// with at most two pending Connects.
func connectEnv(t *testing.T, edit ...func(*turn.Policy)) *env {
	return newEnv(t, append([]func(*turn.Policy){func(p *turn.Policy) {
		p.Peer = func(ap netip.AddrPort) bool { return ap != ownSocket && ap.Addr() != netip.MustParseAddr("10.0.0.1") }
		p.MaxPendingConnects = 2
	}}, edit...)...)
}

// tcpAllocate gives the TCP client c an RFC 6062 allocation.
func (e *env) tcpAllocate(t *testing.T, c *bindings.Client) {
	t.Helper()
	resp := e.do(t, c, e.build(t, stun.MethodAllocate, aliceUser(), rawAttr(stun.AttrRequestedTransport, 6, 0, 0, 0)))
	if !isCode(resp, 0) {
		code, reason := codeOf(resp)
		t.Fatalf("TCP Allocate: %d %s", code, reason)
	}
}

// TestConnect: RFC 6062 §5.2 (and the gate's TestRFC6062Requests rows for
// Connect) — which Connects are refused and how, the dial handed to the
// relay off the reader, and its outcome answered when it is done: the
// CONNECTION-ID, or 447 with the record dropped.
func TestConnect(t *testing.T) {
	good := peerAttr("192.0.2.1:80")
	for _, tc := range []struct {
		name   string
		policy func(*turn.Policy)
		setup  func(t *testing.T, e *env, c *bindings.Client)
		udp    bool
		peer   stun.Setter
		code   int // the immediate answer; -1: none until the dial is done
	}{
		{name: "over UDP: 400", udp: true, setup: func(t *testing.T, e *env, c *bindings.Client) { e.allocate(t, c) }, peer: good, code: 400},
		{name: "over UDP without an allocation: 400", udp: true, peer: good, code: 400},
		{name: "without an allocation: 437", peer: good, code: 437},
		{name: "on a UDP allocation: 400", setup: func(t *testing.T, e *env, c *bindings.Client) { e.allocate(t, c) }, peer: good, code: 400},
		{name: "TCP relays switched off since: 403", setup: func(t *testing.T, e *env, c *bindings.Client) {
			e.tcpAllocate(t, c)
			p := *e.policy
			p.TCPAllocations = false
			e.h.SetPolicy(&p)
		}, peer: good, code: 403},
		{name: "no XOR-PEER-ADDRESS: 400", setup: tcpAllocated, code: 400},
		{name: "peer port 0: 400", setup: tcpAllocated, peer: peerAttr("192.0.2.1:0"), code: 400},
		{name: "to turnd itself: 403", setup: tcpAllocated, peer: peerAttr(ownSocket.String()), code: 403},
		{name: "to a denied peer: 403", setup: tcpAllocated, peer: peerAttr("10.0.0.1:80"), code: 403},
		{name: "to a peer being connected: 446", setup: func(t *testing.T, e *env, c *bindings.Client) {
			e.tcpAllocate(t, c)
			e.h.Serve(e.build(t, stun.MethodConnect, aliceUser(), peerAttr("192.0.2.1:80")), c)
		}, peer: good, code: 446},
		{name: "past the pending cap: 508", setup: func(t *testing.T, e *env, c *bindings.Client) {
			e.tcpAllocate(t, c)
			e.h.Serve(e.build(t, stun.MethodConnect, aliceUser(), peerAttr("192.0.2.1:81")), c)
			e.h.Serve(e.build(t, stun.MethodConnect, aliceUser(), peerAttr("192.0.2.1:82")), c)
		}, peer: good, code: 508},
		{name: "another user's allocation: 441", setup: func(t *testing.T, e *env, c *bindings.Client) {
			e.tcpAllocate(t, c)
		}, peer: good, code: 441},
		{name: "dialled", setup: tcpAllocated, peer: good, code: -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := connectEnv(t)
			c, _ := tcpClient(1)
			if tc.udp {
				c, _ = udpClient(1)
			}
			if tc.setup != nil {
				tc.setup(t, e, c)
			}
			signer := aliceUser()
			if tc.code == 441 {
				signer = carolUser()
			}
			var s []stun.Setter
			if tc.peer != nil {
				s = append(s, tc.peer)
			}
			e.h.Serve(e.build(t, stun.MethodConnect, signer, s...), c)
			got := sent(c)
			if tc.code == -1 {
				if len(got) != 0 {
					t.Fatalf("answered before the dial was done: %v", got)
				}
				return
			}
			if len(got) != 1 {
				t.Fatalf("%d answers, want 1", len(got))
			}
			if code, _ := codeOf(got[0]); code != tc.code || !signedWith(got[0], signer.key) {
				t.Errorf("answered %d (signed: %v), want %d signed", code, signedWith(got[0], signer.key), tc.code)
			}
		})
	}

	for _, outcome := range []struct {
		name string
		err  error
		code int
	}{{"connected: CONNECTION-ID", nil, 0}, {"refused: 447, the record dropped", errors.New("connection refused"), 447}} {
		t.Run(outcome.name, func(t *testing.T) {
			e := connectEnv(t)
			c, _ := tcpClient(1)
			e.tcpAllocate(t, c)
			req := e.build(t, stun.MethodConnect, aliceUser(), good)
			e.h.Serve(req, c)
			call, err := e.relays.lastConnect()
			if err != nil {
				t.Fatal(err)
			}
			for i := range req {
				req[i] = 0 // the edge's buffer is reused: the answer must not read it
			}
			call.done(outcome.err)
			got := sent(c)
			if len(got) != 1 {
				t.Fatalf("%d answers after the dial, want 1", len(got))
			}
			resp := got[0]
			if code, _ := codeOf(resp); code != outcome.code || !signedWith(resp, aliceUser().key) || resp.Type.Method != stun.MethodConnect {
				t.Fatalf("answered %v %d, want a signed Connect %d", resp.Type, code, outcome.code)
			}
			_, _, _, recorded := e.table.Connection(call.id)
			if outcome.err != nil {
				if recorded {
					t.Error("the failed connection is still recorded")
				}
				return
			}
			v, err := resp.Get(stun.AttrConnectionID)
			if err != nil || len(v) != 4 || binary.BigEndian.Uint32(v) != call.id || !recorded {
				t.Errorf("CONNECTION-ID %x (%v), want %d recorded", v, err, call.id)
			}
		})
	}
}

// tcpAllocated is tcpAllocate as a row's setup.
func tcpAllocated(t *testing.T, e *env, c *bindings.Client) { e.tcpAllocate(t, c) }

// sent returns what c was sent, decoded.
func sent(c *bindings.Client) []*stun.Message {
	var raw [][]byte
	if c.Stream != nil {
		raw = c.Stream.(*stream).take()
	} else {
		raw = c.Lane.(*lane).take()
	}
	var out []*stun.Message
	for _, b := range raw {
		m := &stun.Message{Raw: b}
		if m.Decode() == nil {
			out = append(out, m)
		}
	}
	return out
}

// TestConnectionBind: RFC 6062 §5.4 — 400 over UDP, on a connection holding
// an allocation, and for an unknown or already bound CONNECTION-ID; 441 for
// another user's; success answered, then the connection piped to the peer.
func TestConnectionBind(t *testing.T) {
	// connected returns an env whose control connection has a connected peer, and its id.
	connected := func(t *testing.T) (*env, *bindings.Client, uint32) {
		e := connectEnv(t)
		control, _ := tcpClient(1)
		e.tcpAllocate(t, control)
		call := e.connect(t, control, "192.0.2.1:80")
		call.done(nil)
		sent(control)
		return e, control, call.id
	}
	id := connectionID
	t.Run("binds and pipes", func(t *testing.T) {
		e, _, cid := connected(t)
		data, s := tcpClient(2)
		resp := e.do(t, data, e.build(t, methodConnectionBind, aliceUser(), id(cid)))
		if !isCode(resp, 0) || !signedWith(resp, aliceUser().key) {
			t.Fatalf("answered %v", resp.Type)
		}
		if s.piped == nil {
			t.Fatal("the connection was not piped to the peer")
		}
		if _, _, bound, _ := e.table.Connection(cid); !bound {
			t.Error("the table does not hold the connection bound")
		}
		other, _ := tcpClient(3)
		if again := e.do(t, other, e.build(t, methodConnectionBind, aliceUser(), id(cid))); !isCode(again, 400) {
			t.Error("a bound CONNECTION-ID was bound again")
		}
	})
	for _, tc := range []struct {
		name   string
		from   func(e *env, control *bindings.Client) *bindings.Client
		signer user
		id     func(cid uint32) stun.Setter
		code   int
	}{
		{"over UDP: 400", func(*env, *bindings.Client) *bindings.Client { c, _ := udpClient(2); return c }, aliceUser(), id, 400},
		{"on the control connection: 400", func(_ *env, control *bindings.Client) *bindings.Client { return control }, aliceUser(), id, 400},
		{"no CONNECTION-ID: 400", func(*env, *bindings.Client) *bindings.Client { c, _ := tcpClient(2); return c }, aliceUser(),
			func(uint32) stun.Setter { return rawAttr(stun.AttrLifetime, 0, 0, 0, 1) }, 400},
		{"an unknown CONNECTION-ID: 400", func(*env, *bindings.Client) *bindings.Client { c, _ := tcpClient(2); return c }, aliceUser(),
			func(cid uint32) stun.Setter { return id(cid + 1) }, 400},
		{"another user's connection: 441", func(*env, *bindings.Client) *bindings.Client { c, _ := tcpClient(2); return c }, carolUser(), id, 441},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, control, cid := connected(t)
			from := tc.from(e, control)
			resp := e.do(t, from, e.build(t, methodConnectionBind, tc.signer, tc.id(cid)))
			if code, _ := codeOf(resp); code != tc.code || !signedWith(resp, tc.signer.key) {
				t.Errorf("answered %d, want %d signed", code, tc.code)
			}
			if _, _, bound, ok := e.table.Connection(cid); !ok || bound {
				t.Error("a refused ConnectionBind bound the connection")
			}
		})
	}
}
