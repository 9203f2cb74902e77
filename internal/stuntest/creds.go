package stuntest

import (
	"github.com/pion/stun/v4"

	"github.com/turnd/turnd/internal/auth"
)

// Credentials of the one static user most tests sign with.
const (
	Realm = "turnd.test"
	User  = "alice"
	Pass  = "alice-password"
	Nonce = "nonce-0123456789"
)

// MethodConnectionBind is a method pion/stun does not name (RFC 6062 §6.1).
const MethodConnectionBind stun.Method = 0x000B

// RestUser is a REST username valid until 2100, so seeds signed with it stay valid.
const RestUser = "4102444800:bob"

// AliceKey is the long-term key the static user signs with.
func AliceKey() []byte { return auth.LongTermKey(User, Realm, Pass) }

// StaticKeys resolves only the static test user, like turnd's auth.Store.
func StaticKeys() func(username, realm string) (string, [][]byte, error) {
	return auth.New(auth.Options{Realm: Realm, Users: map[string]string{User: Pass}}).Keys
}

// RestKeys are RestUser's keys under the secrets "s1" and "s2", in that order.
func RestKeys() [][]byte {
	return [][]byte{
		auth.LongTermKey(RestUser, Realm, auth.RESTPassword("s1", RestUser)),
		auth.LongTermKey(RestUser, Realm, auth.RESTPassword("s2", RestUser)),
	}
}

// FuzzStore knows the static test user and the REST user of two secrets.
func FuzzStore() *auth.Store {
	return auth.New(auth.Options{Realm: Realm, Users: map[string]string{User: Pass}, Secrets: []string{"s1", "s2"}})
}
