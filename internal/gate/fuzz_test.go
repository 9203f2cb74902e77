package gate_test

import (
	"bytes"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/pion/stun/v4"

	"github.com/turnd/turnd/internal/gate"
)

// actingPolicy answers (draining) and rewrites (lifetime cap) whatever it can.
func actingPolicy() *gate.Policy {
	return &gate.Policy{Keys: fuzzStore().Keys, MultiKey: true, MaxLifetime: time.Minute, RefuseUnknownMethods: true,
		Alternates: fixed(&net.UDPAddr{IP: net.IPv4(127, 0, 0, 10), Port: 3478}, &net.UDPAddr{IP: net.ParseIP("::1"), Port: 3479})}
}

// fuzzGates are gates whose policies between them reach every branch of Inspect.
func fuzzGates() []*gate.Gate {
	return []*gate.Gate{
		gate.New(actingPolicy(), gate.Hooks{Accepting: func() bool { return false }, Redirected: func(string, *net.UDPAddr) {}}),
		gate.New(&gate.Policy{Keys: fuzzStore().Keys, MaxLifetime: time.Minute},
			gate.Hooks{Accepting: func() bool { return true }, TCPRefused: func(string) {}}),
		gate.New(&gate.Policy{Keys: fuzzStore().Keys, TCPAllocations: true}, gate.Hooks{}),
	}
}

// FuzzInspect feeds arbitrary packets to Inspect: it must never panic, and
// whatever it decides must be well-formed.
func FuzzInspect(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		f.Add(s)
	}
	gates := fuzzGates()
	keys := append(restKeys(), aliceKey())
	f.Fuzz(func(t *testing.T, pkt []byte) {
		in := slices.Clone(pkt)
		for i, g := range gates {
			r := &responder{}
			out, v := g.Inspect(pkt, clientAddr(), localAddr(), r)
			if !bytes.Equal(pkt, in) {
				t.Fatalf("gate %d modified its input", i)
			}
			switch v {
			case gate.Pass:
				if out != nil || len(r.sent()) != 0 {
					t.Fatalf("gate %d: Pass with output %x and %d replies", i, out, len(r.sent()))
				}
			case gate.Rewrite:
				if len(r.sent()) != 0 {
					t.Fatalf("gate %d: Rewrite and a reply", i)
				}
				// The UDP wrapper relies on rewrites never growing.
				if len(out) > len(pkt) {
					t.Fatalf("gate %d: rewrite grew %d → %d bytes", i, len(pkt), len(out))
				}
				m := decode(t, out)
				if !verifiesWithAny(m, keys) {
					t.Fatalf("gate %d: rewritten %v does not verify", i, m)
				}
				if m.Contains(stun.AttrDontFragment) && m.Type.Method == stun.MethodAllocate {
					t.Fatalf("gate %d: rewritten Allocate keeps DONT-FRAGMENT", i)
				}
			case gate.Answered:
				got := r.sent()
				if out == nil && len(got) == 0 && !gate.FingerprintOK(pkt) {
					break // RFC 8489 §6.3: a bad FINGERPRINT is dropped silently
				}
				if out != nil || len(got) != 1 {
					t.Fatalf("gate %d: Answered with output %x and %d replies", i, out, len(got))
				}
				m := decode(t, got[0].b)
				if unknownMethodRefused(m) {
					break // nobody is authenticated for a method turnd does not serve
				}
				if m.Contains(stun.AttrFingerprint) && stun.Fingerprint.Check(m) != nil {
					t.Fatalf("gate %d: answer %v has a bad FINGERPRINT", i, m)
				}
				// Only a 300 to an Allocate without credentials goes unsigned.
				unsigned300 := !decode(t, pkt).Contains(stun.AttrMessageIntegrity) &&
					m.Type.Method == stun.MethodAllocate && !m.Contains(stun.AttrMessageIntegrity) &&
					!m.Contains(stun.AttrNonce) && errorCode(t, m) == stun.CodeTryAlternate
				if !unsigned300 && (!verifiesWithAny(m, keys) || stun.Fingerprint.Check(m) != nil) {
					t.Fatalf("gate %d: answer %v is not signed", i, m)
				}
			default:
				t.Fatalf("gate %d: verdict %d", i, v)
			}
		}
		for _, g := range gates {
			g.TakeDontFragment(clientAddr(), localAddr())
		}
	})
}

// unknownMethodRefused reports whether m is the gate's 400 to a request for
// a method pion does not serve.
func unknownMethodRefused(m *stun.Message) bool {
	switch m.Type.Method {
	case stun.MethodBinding, stun.MethodAllocate, stun.MethodRefresh, stun.MethodCreatePermission,
		stun.MethodChannelBind, stun.MethodConnect, methodConnectionBind:
		return false
	}
	var ec stun.ErrorCodeAttribute
	return ec.GetFrom(m) == nil && ec.Code == stun.CodeBadRequest && stun.Fingerprint.Check(m) == nil
}

func verifiesWithAny(m *stun.Message, keys [][]byte) bool {
	for _, k := range keys {
		if stun.MessageIntegrity(k).Check(m) == nil {
			return true
		}
	}
	return false
}
