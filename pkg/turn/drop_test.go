package turn_test

import (
	"testing"

	"github.com/pion/stun/v4"

	"github.com/turnd/turnd/internal/auth"
	"github.com/turnd/turnd/pkg/allocation"
	"github.com/turnd/turnd/pkg/turn"
)

// TestDropsDoNotAllocate: the messages Serve drops before decoding — a Send
// indication the fast path left, another indication, a bad FINGERPRINT, a
// client's response — allocate nothing: a client may send them at packet
// rates.
func TestDropsDoNotAllocate(t *testing.T) {
	n, err := auth.NewNonces(nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	h := turn.New(turn.Options{Table: allocation.New(allocation.Limits{}, allocation.Hooks{}), Relays: newRelays(), Nonces: n},
		&turn.Policy{Creds: auth.New(auth.Options{Realm: realm}), UnauthenticatedRate: 1})
	c, l := udpClient(1)
	send := raw(t, stun.TransactionID, stun.NewType(stun.MethodSend, stun.ClassIndication), peerAttr("192.0.2.1:9"),
		rawAttr(stun.AttrData, 'x'), stun.Fingerprint)
	bad := append([]byte(nil), send...)
	bad[len(bad)-1] ^= 0xFF
	data := raw(t, stun.TransactionID, stun.NewType(stun.MethodData, stun.ClassIndication))
	response := raw(t, stun.TransactionID, stun.BindingSuccess)
	for name, pkt := range map[string][]byte{"Send": send, "bad FINGERPRINT": bad, "Data": data, "response": response} {
		h.Serve(pkt, c) // the client's rate-limit bucket exists from here on
		if got := testing.AllocsPerRun(100, func() { h.Serve(pkt, c) }); got != 0 {
			t.Errorf("%s: %v allocations per message, want 0", name, got)
		}
	}
	if got := l.take(); len(got) != 0 {
		t.Errorf("%d answers to dropped messages", len(got))
	}
}
