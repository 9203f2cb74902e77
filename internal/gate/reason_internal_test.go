package gate

import (
	"bytes"
	"net"
	"testing"

	"github.com/pion/stun/v4"
)

// reasons are the phrases of RFC 8489 §14.8, RFC 8656 §19, RFC 6062 §6.3 and
// RFC 6156 §10.2, written out here rather than read from pion/stun so that a
// change there shows.
var reasons = map[stun.ErrorCode]string{
	300: "Try Alternate", 400: "Bad Request", 401: "Unauthorized", 403: "Forbidden",
	420: "Unknown Attribute", 437: "Allocation Mismatch", 438: "Stale Nonce",
	440: "Address Family not Supported", 441: "Wrong Credentials", 442: "Unsupported Transport Protocol",
	443: "Peer Address Family Mismatch", 446: "Connection Already Exists",
	447: "Connection Timeout or Failure", 486: "Allocation Quota Reached", 500: "Server Error",
	508: "Insufficient Capacity",
}

// pionError builds an error response the way pion does: ERROR-CODE without
// a reason, then (signed) MESSAGE-INTEGRITY, and FINGERPRINT if asked.
func pionError(t *testing.T, code stun.ErrorCode, key []byte, extra ...stun.Setter) *stun.Message {
	t.Helper()
	setters := []stun.Setter{stun.TransactionID, stun.NewType(stun.MethodAllocate, stun.ClassErrorResponse),
		&stun.ErrorCodeAttribute{Code: code}}
	setters = append(setters, extra...)
	if key != nil {
		setters = append(setters, stun.MessageIntegrity(key))
	}
	m, err := stun.Build(setters...)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestReasonPhrases: every error code turnd sends leaves with its reason
// phrase, signed again with the key pion signed it with, every other
// attribute kept in order.
func TestReasonPhrases(t *testing.T) {
	key := []byte("alice's key")
	client := &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 50000}
	for code, want := range reasons {
		for _, signed := range []bool{true, false} {
			if code == stun.CodeUnauthorized && !signed {
				continue // stays bare: TestReasonLeftAlone
			}
			g := New(&Policy{}, Hooks{})
			var k []byte
			extra := []stun.Setter{stun.NewRealm("example.org"), stun.NewNonce("n0nce")}
			if signed {
				k = key
				extra = extra[:0]
				g.NoteKey(client, key)
			}
			in := pionError(t, code, k, extra...)
			out, changed := g.withReason(in.Raw, client)
			if !changed {
				t.Fatalf("%d (signed %v): left without its reason", code, signed)
			}
			m := &stun.Message{Raw: out}
			if err := m.Decode(); err != nil {
				t.Fatalf("%d: decode: %v", code, err)
			}
			var ec stun.ErrorCodeAttribute
			if err := ec.GetFrom(m); err != nil || ec.Code != code || string(ec.Reason) != want {
				t.Errorf("%d (signed %v): ERROR-CODE %v (%v), want %d %q", code, signed, ec, err, code, want)
			}
			if m.TransactionID != in.TransactionID || m.Type != in.Type {
				t.Errorf("%d: transaction or type changed", code)
			}
			if signed {
				if err := stun.MessageIntegrity(key).Check(m); err != nil {
					t.Errorf("%d: MESSAGE-INTEGRITY does not verify: %v", code, err)
				}
			} else if m.Contains(stun.AttrMessageIntegrity) || !m.Contains(stun.AttrNonce) || !m.Contains(stun.AttrRealm) {
				t.Errorf("%d unsigned: attributes %v", code, m.Attributes)
			}
		}
	}
}

// TestReasonLeftAlone lists what withReason must not touch.
func TestReasonLeftAlone(t *testing.T) {
	key := []byte("alice's key")
	client := &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 50000}
	withReason, err := stun.Build(stun.TransactionID, stun.NewType(stun.MethodAllocate, stun.ClassErrorResponse),
		&stun.ErrorCodeAttribute{Code: 486, Reason: []byte("Quota")}, stun.MessageIntegrity(key))
	if err != nil {
		t.Fatal(err)
	}
	success, err := stun.Build(stun.TransactionID, stun.NewType(stun.MethodAllocate, stun.ClassSuccessResponse), stun.MessageIntegrity(key))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		key  []byte
		b    []byte
	}{
		{"signed, key unknown", nil, pionError(t, 486, key).Raw},
		{"signed, another key noted", []byte("bob's key"), pionError(t, 486, key).Raw},
		{"reason already there", key, withReason.Raw},
		{"code without a standard phrase", nil, pionError(t, 499, nil).Raw},
		{"unsigned 401 (amplification)", nil, pionError(t, 401, nil, stun.NewRealm("turnd.local"), stun.NewNonce("n0nce")).Raw},
		{"success response", key, success.Raw},
		{"ChannelData", nil, []byte{0x40, 0x00, 0x00, 0x10, 0x01, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00}},
		{"short", nil, []byte{0x01, 0x13}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := New(&Policy{}, Hooks{})
			if tc.key != nil {
				g.NoteKey(client, tc.key)
			}
			in := append([]byte(nil), tc.b...)
			out, changed := g.withReason(in, client)
			if changed || !bytes.Equal(out, tc.b) {
				t.Errorf("changed %v: %x, want the bytes as they were", changed, out)
			}
			if g.signingKey.size() != 0 && tc.b[0]&0xC0 == 0 && len(tc.b) >= 20 {
				t.Errorf("the key outlived the response")
			}
		})
	}
}
