package e2e

import (
	"fmt"
	"sync"

	"github.com/pion/stun/v4"
)

// nonceAlias lets a turnProxy show a client a stale nonce honestly. The
// client never holds one of turnd's nonces: each 401 or 438 reaches it with
// a fresh alias of turnd's nonce, and each request signed with an alias
// goes to turnd with the nonce behind it, signed again with the password,
// except the requests stale picks. Those reach turnd with the alias, a nonce
// it never issued, which it must refuse with 438 and a nonce of its own; the
// client sees that 438 with a new alias, so the test tells whether its next
// request takes the 438's nonce or keeps the old one.
type nonceAlias struct {
	user, password string
	stale          func(request) bool // called by the proxy's forwarding goroutine alone

	mu   sync.Mutex
	real map[string]string // turnd's nonce by its alias
}

func newNonceAlias(user, password string, stale func(request) bool) *nonceAlias {
	return &nonceAlias{user: user, password: password, stale: stale, real: map[string]string{}}
}

// request returns the datagram to forward for q (decoded as m, raw b), and
// whether it goes with a nonce turnd never issued.
func (n *nonceAlias) request(q request, m *stun.Message, b []byte) ([]byte, bool) {
	n.mu.Lock()
	real, ok := n.real[q.nonce]
	n.mu.Unlock()
	if !ok {
		return b, false // no nonce yet
	}
	if n.stale(q) {
		return b, true
	}
	if out, err := withNonce(m, real, n.user, n.password); err == nil {
		return out, false
	}
	return b, false
}

// answer returns the datagram to pass on for turnd's answer a and the
// nonce the client sees in it: a new alias for any nonce turnd sent.
func (n *nonceAlias) answer(a answer, m *stun.Message, b []byte) ([]byte, string) {
	if a.nonce == "" {
		return b, ""
	}
	shifted := []byte(a.nonce)
	for i := range shifted {
		shifted[i] = 'a' + (shifted[i]+1)%26 // never the character it replaces
	}
	n.mu.Lock()
	alias := fmt.Sprintf("alias%d-%s", len(n.real), shifted)
	n.real[alias] = a.nonce
	n.mu.Unlock()
	if out, err := withNonce(m, alias, n.user, n.password); err == nil {
		return out, alias
	}
	return b, a.nonce
}

// withNonce rebuilds m with nonce as its NONCE, signed again with the
// long-term key of user, its REALM and password if it was signed, and with
// a new FINGERPRINT if it had one.
func withNonce(m *stun.Message, nonce, user, password string) ([]byte, error) {
	out := stun.New()
	out.Type, out.TransactionID = m.Type, m.TransactionID
	out.WriteHeader()
	signed, fingerprint := false, false
	for _, a := range m.Attributes {
		switch a.Type {
		case stun.AttrMessageIntegrity:
			signed = true
		case stun.AttrMessageIntegritySHA256:
			// never sent by the clients held here (TestBrowserRelayCallOverIPv6URL)
		case stun.AttrFingerprint:
			fingerprint = true
		case stun.AttrNonce:
			out.Add(a.Type, []byte(nonce))
		default:
			if !signed {
				out.Add(a.Type, a.Value)
			}
		}
	}
	if signed {
		var realm stun.Realm
		if err := realm.GetFrom(m); err != nil {
			return nil, err
		}
		if err := stun.NewLongTermIntegrity(user, realm.String(), password).AddTo(out); err != nil {
			return nil, err
		}
	}
	if fingerprint {
		if err := stun.Fingerprint.AddTo(out); err != nil {
			return nil, err
		}
	}
	return out.Raw, nil
}
