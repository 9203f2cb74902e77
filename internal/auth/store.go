package auth

import (
	"crypto/rand"
	"fmt"
	"time"
)

// DefaultSeparator separates expiry and user in a TURN REST username, as in
// coturn's rest-api-separator default.
const DefaultSeparator = ":"

// Options configures a Store.
type Options struct {
	// Realm is the only realm accepted.
	Realm string
	// Users maps static usernames to passwords (coturn's user=name:pass).
	Users map[string]string
	// Secrets are the TURN REST API shared secrets, tried in this order.
	// Empty means REST usernames are not accepted.
	Secrets []string
	// Separator splits "<expiry><sep><user>". Empty means DefaultSeparator.
	Separator string
	// Now tells the time for expiry checks. Nil means time.Now.
	Now func() time.Time
	// MaxValidity refuses REST usernames that expire further ahead than
	// this. 0 means no cap (up to year 9999).
	MaxValidity time.Duration
	// Revoked are user IDs refused whatever their credentials: static
	// names, or the user part of REST usernames.
	Revoked []string
}

// Store resolves usernames to long-term keys. It is immutable after New and
// safe for concurrent use.
type Store struct {
	realm   string
	static  map[string][][]byte
	secrets []string
	sep     string
	now     func() time.Time
	maxTTL  time.Duration
	decoy   [][]byte
	revoked map[string]bool
}

// New builds a Store from o. It copies everything it keeps, so later changes
// to o's map or slice do not affect the Store.
func New(o Options) *Store {
	s := &Store{
		realm:   o.Realm,
		static:  make(map[string][][]byte, len(o.Users)),
		secrets: append([]string(nil), o.Secrets...),
		sep:     o.Separator,
		now:     o.Now,
		maxTTL:  o.MaxValidity,
		revoked: make(map[string]bool, len(o.Revoked)),
	}
	for _, u := range o.Revoked {
		s.revoked[u] = true
	}
	if s.sep == "" {
		s.sep = DefaultSeparator
	}
	if s.now == nil {
		s.now = time.Now
	}
	// Static keys depend only on configuration, so they are computed once
	// rather than on every request.
	for name, pass := range o.Users {
		s.static[name] = [][]byte{LongTermKey(name, o.Realm, pass)}
	}
	s.decoy = [][]byte{LongTermKey("", o.Realm, rand.Text())}
	return s
}

// Decoy returns a key no client can know, for a request whose username Keys
// refused. Checking MESSAGE-INTEGRITY against it fails just as a wrong
// password does, after the same work: a client cannot tell an unknown user
// from a known one by the answer or its timing. Like Keys' result, the slice
// is shared and must not be modified.
func (s *Store) Decoy() [][]byte { return s.decoy }

// Realm returns the configured realm.
func (s *Store) Realm() string { return s.realm }

// Keys returns the user ID to account the request to and the candidate keys
// for username in realm. The caller accepts the request if any key verifies
// its MESSAGE-INTEGRITY; several keys mean several REST secrets (rotation).
// The returned slices are shared and must not be modified.
//
// Keys is called on every authenticated TURN request (not per data packet).
// Errors wrap ErrRealmMismatch, ErrExpired, ErrTooLong, ErrRevoked or ErrUnknownUser.
func (s *Store) Keys(username, realm string) (userID string, keys [][]byte, err error) {
	if realm != s.realm {
		return "", nil, fmt.Errorf("check realm: %w", ErrRealmMismatch)
	}
	if k, ok := s.static[username]; ok {
		if s.revoked[username] {
			return "", nil, fmt.Errorf("check user %s: %w", username, ErrRevoked)
		}
		return username, k, nil
	}
	if len(s.secrets) == 0 {
		return "", nil, fmt.Errorf("look up user: %w", ErrUnknownUser)
	}
	r, err := parseREST(username, s.sep)
	if err != nil {
		return "", nil, err
	}
	now := s.now()
	if !r.expiry.After(now) {
		return "", nil, fmt.Errorf("check rest username expiry %s: %w", r.expiry.UTC().Format(time.RFC3339), ErrExpired)
	}
	if s.maxTTL > 0 && r.expiry.Sub(now) > s.maxTTL {
		return "", nil, fmt.Errorf("check rest username expiry %s: %w", r.expiry.UTC().Format(time.RFC3339), ErrTooLong)
	}
	if s.revoked[r.userID] {
		return "", nil, fmt.Errorf("check user %s: %w", r.userID, ErrRevoked)
	}
	keys = make([][]byte, len(s.secrets))
	for i, secret := range s.secrets {
		keys[i] = LongTermKey(username, realm, RESTPassword(secret, username))
	}
	return r.userID, keys, nil
}
