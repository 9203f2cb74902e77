package turn

import (
	"net/netip"
	"testing"

	"github.com/pion/stun/v4"

	"github.com/turnd/turnd/internal/auth"
	"github.com/turnd/turnd/internal/bindings"
	"github.com/turnd/turnd/internal/netaddr"
)

// capture is a bindings.Lane keeping the last answer.
type capture struct{ last []byte }

func (c *capture) WriteToUDPAddrPort(b []byte, _ netip.AddrPort) (int, error) {
	c.last = append([]byte(nil), b...)
	return len(b), nil
}

// TestReasonPhrases: every error code turnd sends goes out with the reason
// phrase its RFC gives it, written out here from RFC 8489 §14.8, RFC 8656
// §19 and RFC 6062 §6.3 rather than taken from the table reply uses; the
// answer stays signed with the request's key and keeps its FINGERPRINT.
func TestReasonPhrases(t *testing.T) {
	key := auth.LongTermKey("alice", "turnd.test", "pw")
	h := &Handler{}
	for code, phrase := range map[stun.ErrorCode]string{
		300: "Try Alternate",
		400: "Bad Request",
		403: "Forbidden",
		420: "Unknown Attribute",
		437: "Allocation Mismatch",
		438: "Stale Nonce",
		440: "Address Family not Supported",
		441: "Wrong Credentials",
		442: "Unsupported Transport Protocol",
		443: "Peer Address Family Mismatch",
		446: "Connection Already Exists",
		447: "Connection Timeout or Failure",
		486: "Allocation Quota Reached",
		508: "Insufficient Capacity",
	} {
		lane := &capture{}
		m := &stun.Message{Type: stun.NewType(stun.MethodAllocate, stun.ClassRequest), TransactionID: stun.NewTransactionID()}
		r := &Request{Msg: m, Key: key, fingerprint: true,
			From: &bindings.Client{Tuple: netaddr.FiveTuple{Client: netip.MustParseAddrPort("127.0.0.1:5000")}, Lane: lane}}
		h.fail(r, code)
		resp := &stun.Message{Raw: lane.last}
		if err := resp.Decode(); err != nil {
			t.Fatalf("%d: answer does not decode: %v", code, err)
		}
		var ec stun.ErrorCodeAttribute
		if err := ec.GetFrom(resp); err != nil || ec.Code != code || string(ec.Reason) != phrase {
			t.Errorf("%d answered as %d %q (%v), want %q", code, ec.Code, ec.Reason, err, phrase)
		}
		if resp.Type != stun.NewType(stun.MethodAllocate, stun.ClassErrorResponse) || resp.TransactionID != m.TransactionID {
			t.Errorf("%d: answer %v of transaction %x, want an Allocate error of %x", code, resp.Type, resp.TransactionID, m.TransactionID)
		}
		if stun.MessageIntegrity(key).Check(resp) != nil || stun.Fingerprint.Check(resp) != nil {
			t.Errorf("%d: not signed with the request's key, or no FINGERPRINT", code)
		}
	}
}
