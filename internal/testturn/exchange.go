package testturn

import (
	"time"

	"github.com/pion/stun/v4"

	"github.com/turnd/turnd/internal/auth"
)

// fenceTimeout bounds the wait for the Binding that follows a request in Answer.
const fenceTimeout = 3 * time.Second

// Answer sends req once and returns the server's response to it, or nil if
// the server did not answer. It tells silence from slowness without a
// timer: a STUN Binding sent right behind req is answered after req was
// handled (one client's messages are handled in order), so once the Binding's
// response is in, any response to req has arrived too.
func (c *Client) Answer(req *stun.Message) *stun.Message {
	c.t.Helper()
	fence, err := stun.Build(stun.TransactionID, stun.BindingRequest, stun.Fingerprint)
	if err != nil {
		c.t.Fatal(err)
	}
	for _, m := range []*stun.Message{req, fence} {
		if _, err := c.conn.Write(m.Raw); err != nil {
			c.t.Fatalf("write: %v", err)
		}
	}
	var got *stun.Message
	deadline := time.Now().Add(fenceTimeout)
	for {
		m, err := c.read(deadline)
		if err != nil {
			c.t.Fatalf("no answer to the Binding behind %v: %v", req.Type, err)
		}
		switch m.TransactionID {
		case req.TransactionID:
			got = m
		case fence.TransactionID:
			return got
		}
	}
}

// Ask is Request, except that the signed request is sent once (see
// Answer) and nil is returned when the server does not answer it.
func (c *Client) Ask(method stun.Method, attrs ...stun.Setter) *stun.Message {
	c.t.Helper()
	c.Learn()
	return c.Answer(c.Build(method, attrs...))
}

// Learn makes sure the client knows the realm and a nonce: if it does not
// yet, it sends an unsigned Refresh, which changes nothing on the server and
// is answered 401 with both (RFC 8489 §9.2.4).
func (c *Client) Learn() {
	c.t.Helper()
	if c.nonce != nil {
		return
	}
	resp := c.RoundTrip(c.Build(stun.MethodRefresh))
	var nonce stun.Nonce
	var realm stun.Realm
	if ErrorCode(resp) != 401 || nonce.GetFrom(resp) != nil || realm.GetFrom(resp) != nil {
		c.t.Fatalf("unsigned Refresh: %d without realm and nonce", ErrorCode(resp))
	}
	c.nonce, c.realm = nonce, realm.String()
	c.key = auth.LongTermKey(c.user, c.realm, c.pass)
}

// Build returns a request signed with the credentials learnt so far (see
// Learn; unsigned before), with FINGERPRINT.
func (c *Client) Build(method stun.Method, attrs ...stun.Setter) *stun.Message {
	c.t.Helper()
	setters := []stun.Setter{stun.TransactionID, stun.NewType(method, stun.ClassRequest)}
	setters = append(setters, attrs...)
	if c.nonce != nil {
		setters = append(setters, stun.NewUsername(c.user), stun.NewRealm(c.realm), stun.NewNonce(string(c.nonce)),
			stun.MessageIntegrity(c.key))
	}
	setters = append(setters, stun.Fingerprint)
	req, err := stun.Build(setters...)
	if err != nil {
		c.t.Fatal(err)
	}
	return req
}

// As returns a client on the same connection that signs as user: another
// user acting on this client's allocation. It shares the realm and nonce
// learnt so far.
func (c *Client) As(user, pass string) *Client {
	o := *c
	o.user, o.pass = user, pass
	if o.realm != "" {
		o.key = auth.LongTermKey(user, o.realm, pass)
	}
	return &o
}

// WithNonce returns a client on the same connection that sends nonce
// instead of the one it learnt.
func (c *Client) WithNonce(nonce string) *Client {
	o := *c
	o.nonce = []byte(nonce)
	return &o
}
