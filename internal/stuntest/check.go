package stuntest

import (
	"encoding/binary"
	"testing"

	"github.com/pion/stun/v4"

	"github.com/turnd/turnd/internal/wire"
)

// Decode parses a STUN message or fails the test.
func Decode(tb testing.TB, b []byte) *stun.Message {
	tb.Helper()
	m := &stun.Message{Raw: append([]byte(nil), b...)}
	if err := m.Decode(); err != nil {
		tb.Fatalf("decode %x: %v", b, err)
	}
	return m
}

// CheckSigned asserts m carries MESSAGE-INTEGRITY valid under key and a valid FINGERPRINT.
func CheckSigned(tb testing.TB, m *stun.Message, key []byte) {
	tb.Helper()
	if err := stun.MessageIntegrity(key).Check(m); err != nil {
		tb.Errorf("MESSAGE-INTEGRITY of %v does not verify: %v", m, err)
	}
	if err := stun.Fingerprint.Check(m); err != nil {
		tb.Errorf("FINGERPRINT of %v does not verify: %v", m, err)
	}
}

// ErrorCode returns the ERROR-CODE of an error response.
func ErrorCode(tb testing.TB, m *stun.Message) stun.ErrorCode {
	tb.Helper()
	var ec stun.ErrorCodeAttribute
	if err := ec.GetFrom(m); err != nil {
		tb.Fatalf("no ERROR-CODE in %v: %v", m, err)
	}
	return ec.Code
}

// FingerprintOK is turnd's FINGERPRINT rule, for tests: true if pkt has no
// FINGERPRINT, is not RFC 8489 STUN (the attribute means nothing there),
// or its FINGERPRINT matches by wire.FingerprintOK. The handlers drop the
// others unanswered.
func FingerprintOK(pkt []byte) bool {
	a := wire.Walk(pkt)
	for a.Next() {
		if a.Type() == wire.AttrFingerprint {
			return binary.BigEndian.Uint32(pkt[4:8]) != wire.MagicCookie || wire.FingerprintOK(pkt, &a)
		}
	}
	return true
}
