package gate_test

import (
	"encoding/binary"
	"testing"

	"github.com/pion/stun/v4"

	"github.com/turnd/turnd/internal/gate"
	"github.com/turnd/turnd/internal/stuntest"
)

// TestStuntestFingerprintIsTheGates: the edge's fuzz target judges drops by
// stuntest's copy of the gate's FINGERPRINT rule; the copy must stay the rule.
func TestStuntestFingerprintIsTheGates(t *testing.T) {
	signed := aliceAllocate(t)
	bad := append([]byte(nil), signed...)
	bad[len(bad)-1] ^= 0xFF // the FINGERPRINT value
	rfc3489 := append([]byte(nil), bad...)
	binary.BigEndian.PutUint32(rfc3489[4:8], 0x01020304) // no magic cookie
	unsigned := request(t, stun.MethodRefresh, testUser, nil, false)
	packets := append(stuntest.FuzzSeeds(t), signed, bad, rfc3489, unsigned)
	for i, p := range packets {
		if got, want := stuntest.FingerprintOK(p), gate.FingerprintOK(p); got != want {
			t.Errorf("packet %d (%x): stuntest says %v, the gate %v", i, p, got, want)
		}
	}
	if stuntest.FingerprintOK(bad) || !stuntest.FingerprintOK(rfc3489) {
		t.Error("the bad and the RFC 3489 FINGERPRINT are not told apart")
	}
}
