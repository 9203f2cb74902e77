package turn_test

import (
	"slices"
	"testing"

	"github.com/pion/stun/v4"
)

// TestUnknownAttributes: RFC 8489 §6.3.1.1 — an unknown
// comprehension-required attribute is 420 with UNKNOWN-ATTRIBUTES listing
// each, signed once the request verified, and only then: an unsigned
// request is challenged first, as pion did. Comprehension-optional
// attributes and every attribute turnd knows (DONT-FRAGMENT,
// ADDITIONAL-ADDRESS-FAMILY in both numberings) are not refused.
func TestUnknownAttributes(t *testing.T) {
	e := newEnv(t)
	c, _ := udpClient(1)
	resp := e.do(t, c, e.build(t, stun.MethodAllocate, aliceUser(), transportUDP(), rawAttr(0x7F01, 1), rawAttr(0x0033, 2), rawAttr(0xC001, 3)))
	var u stun.UnknownAttributes
	if code, reason := codeOf(resp); code != 420 || reason != "Unknown Attribute" || u.GetFrom(resp) != nil ||
		!slices.Equal([]stun.AttrType(u), []stun.AttrType{0x7F01, 0x0033}) || !signedWith(resp, aliceUser().key) {
		t.Fatalf("answered %d %q listing %v (signed %v), want a signed 420 listing 0x7f01 and 0x33", code, reason, u, signedWith(resp, aliceUser().key))
	}
	if resp := e.do(t, c, e.build(t, stun.MethodAllocate, user{}, transportUDP(), rawAttr(0x7F01, 1))); !isCode(resp, 401) {
		t.Errorf("unsigned: answered %v, want the 401 challenge first", resp.Type)
	}
	resp = e.do(t, c, e.build(t, stun.MethodAllocate, aliceUser(), transportUDP(), rawAttr(stun.AttrDontFragment),
		dual(0x8000), rawAttr(0xC001, 3)))
	if !isCode(resp, 0) {
		code, reason := codeOf(resp)
		t.Errorf("known and optional attributes: %d %s", code, reason)
	}
}
