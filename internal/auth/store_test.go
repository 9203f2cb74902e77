package auth_test

import (
	"bytes"
	"encoding/hex"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/turnd/turnd/internal/auth"
)

const realm = "turnd.local"

// now is the injected clock of every test store.
var now = time.Unix(1_700_000_000, 0)

func fixedNow() time.Time { return now }

func TestKeys(t *testing.T) {
	future := strconv.FormatInt(now.Unix()+3600, 10)
	past := strconv.FormatInt(now.Unix()-1, 10)
	exact := strconv.FormatInt(now.Unix(), 10)

	tests := []struct {
		name     string
		opts     auth.Options
		username string
		realm    string
		wantID   string
		// wantSecrets are the secrets whose client keys must be returned, in order.
		// Nil with wantErr nil means a static user with wantPass.
		wantSecrets []string
		wantPass    string
		wantErr     error
	}{
		{name: "static user", opts: auth.Options{Users: map[string]string{"alice": "s3cret"}},
			username: "alice", realm: realm, wantID: "alice", wantPass: "s3cret"},
		{name: "static user wins over rest", opts: auth.Options{Users: map[string]string{future: "pw"}, Secrets: []string{"north"}},
			username: future, realm: realm, wantID: future, wantPass: "pw"},
		{name: "unknown static user", opts: auth.Options{Users: map[string]string{"alice": "s3cret"}},
			username: "bob", realm: realm, wantErr: auth.ErrUnknownUser},
		{name: "rest user without secrets", opts: auth.Options{Users: map[string]string{"alice": "s3cret"}},
			username: future + ":bob", realm: realm, wantErr: auth.ErrUnknownUser},
		{name: "rest with user part", opts: auth.Options{Secrets: []string{"north"}},
			username: future + ":bob", realm: realm, wantID: "bob", wantSecrets: []string{"north"}},
		{name: "rest without user part", opts: auth.Options{Secrets: []string{"north"}},
			username: future, realm: realm, wantID: future, wantSecrets: []string{"north"}},
		{name: "rest with empty user part", opts: auth.Options{Secrets: []string{"north"}},
			username: future + ":", realm: realm, wantID: future + ":", wantSecrets: []string{"north"}},
		{name: "rest user part holds separator", opts: auth.Options{Secrets: []string{"north"}},
			username: future + ":bob:laptop", realm: realm, wantID: "bob:laptop", wantSecrets: []string{"north"}},
		{name: "custom separator", opts: auth.Options{Secrets: []string{"north"}, Separator: "-"},
			username: future + "-bob", realm: realm, wantID: "bob", wantSecrets: []string{"north"}},
		{name: "custom separator ignores colon", opts: auth.Options{Secrets: []string{"north"}, Separator: "-"},
			username: future + ":bob", realm: realm, wantErr: auth.ErrUnknownUser},
		{name: "multi-byte separator", opts: auth.Options{Secrets: []string{"north"}, Separator: "::"},
			username: future + "::bob", realm: realm, wantID: "bob", wantSecrets: []string{"north"}},
		{name: "two secrets in order", opts: auth.Options{Secrets: []string{"new", "old"}},
			username: future + ":bob", realm: realm, wantID: "bob", wantSecrets: []string{"new", "old"}},
		{name: "revoked static user", opts: auth.Options{Users: map[string]string{"alice": "s3cret"}, Revoked: []string{"alice"}},
			username: "alice", realm: realm, wantErr: auth.ErrRevoked},
		{name: "revoked rest user", opts: auth.Options{Secrets: []string{"north"}, Revoked: []string{"bob"}},
			username: future + ":bob", realm: realm, wantErr: auth.ErrRevoked},
		{name: "revocation names the user, not the username", opts: auth.Options{Secrets: []string{"north"}, Revoked: []string{future + ":bob"}},
			username: future + ":bob", realm: realm, wantID: "bob", wantSecrets: []string{"north"}},
		{name: "another user is not revoked", opts: auth.Options{Users: map[string]string{"alice": "s3cret"}, Revoked: []string{"mallory"}},
			username: "alice", realm: realm, wantID: "alice", wantPass: "s3cret"},
		{name: "expired", opts: auth.Options{Secrets: []string{"north"}},
			username: past + ":bob", realm: realm, wantErr: auth.ErrExpired},
		{name: "expiry exactly now", opts: auth.Options{Secrets: []string{"north"}},
			username: exact + ":bob", realm: realm, wantErr: auth.ErrExpired},
		{name: "expiry zero", opts: auth.Options{Secrets: []string{"north"}},
			username: "0:bob", realm: realm, wantErr: auth.ErrExpired},
		{name: "expiry not a number", opts: auth.Options{Secrets: []string{"north"}},
			username: "bob:" + future, realm: realm, wantErr: auth.ErrUnknownUser},
		{name: "expiry negative", opts: auth.Options{Secrets: []string{"north"}},
			username: "-5:bob", realm: realm, wantErr: auth.ErrUnknownUser},
		{name: "expiry with plus sign", opts: auth.Options{Secrets: []string{"north"}},
			username: "+" + future + ":bob", realm: realm, wantErr: auth.ErrUnknownUser},
		{name: "expiry absurd", opts: auth.Options{Secrets: []string{"north"}},
			username: "99999999999999999999999:bob", realm: realm, wantErr: auth.ErrUnknownUser},
		{name: "expiry empty", opts: auth.Options{Secrets: []string{"north"}},
			username: ":bob", realm: realm, wantErr: auth.ErrUnknownUser},
		{name: "empty username", opts: auth.Options{Secrets: []string{"north"}},
			username: "", realm: realm, wantErr: auth.ErrUnknownUser},
		{name: "realm mismatch static", opts: auth.Options{Users: map[string]string{"alice": "s3cret"}},
			username: "alice", realm: "other.example", wantErr: auth.ErrRealmMismatch},
		{name: "realm mismatch rest", opts: auth.Options{Secrets: []string{"north"}},
			username: future + ":bob", realm: "other.example", wantErr: auth.ErrRealmMismatch},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.opts.Realm = realm
			tt.opts.Now = fixedNow
			s := auth.New(tt.opts)
			id, keys, err := s.Keys(tt.username, tt.realm)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("Keys err = %v, want %v", err, tt.wantErr)
				}
				if id != "" || keys != nil {
					t.Errorf("Keys returned %q, %d keys with an error", id, len(keys))
				}
				return
			}
			if err != nil {
				t.Fatalf("Keys: %v", err)
			}
			if id != tt.wantID {
				t.Errorf("userID = %q, want %q", id, tt.wantID)
			}
			var want [][]byte
			if tt.wantSecrets == nil {
				want = [][]byte{clientKey(tt.username, realm, tt.wantPass)}
			}
			for _, secret := range tt.wantSecrets {
				want = append(want, clientKey(tt.username, realm, clientPassword(secret, tt.username)))
			}
			if len(keys) != len(want) {
				t.Fatalf("got %d keys, want %d", len(keys), len(want))
			}
			for i := range want {
				if hex.EncodeToString(keys[i]) != hex.EncodeToString(want[i]) {
					t.Errorf("key %d = %x, want %x", i, keys[i], want[i])
				}
			}
		})
	}
}

// TestKeysKnownVector pins one REST key to a value computed with openssl and
// md5sum, so a bug shared by the package and the test helpers still shows.
func TestKeysKnownVector(t *testing.T) {
	s := auth.New(auth.Options{Realm: realm, Secrets: []string{"north"}, Now: func() time.Time { return time.Unix(0, 0) }})
	_, keys, err := s.Keys("1700000000:alice", realm)
	if err != nil {
		t.Fatalf("Keys: %v", err)
	}
	if got, want := hex.EncodeToString(keys[0]), "5a80d6cb39bc7c17915f79c5346b4aa4"; got != want {
		t.Errorf("key = %s, want %s", got, want)
	}
}

func TestExpiryBoundary(t *testing.T) {
	expiry := now.Unix() + 10
	username := strconv.FormatInt(expiry, 10) + ":bob"
	tests := []struct {
		name    string
		now     time.Time
		wantErr error
	}{
		{"well before", time.Unix(expiry-10, 0), nil},
		{"just before", time.Unix(expiry, 0).Add(-time.Nanosecond), nil},
		{"exactly at expiry", time.Unix(expiry, 0), auth.ErrExpired},
		{"just after", time.Unix(expiry, 0).Add(time.Nanosecond), auth.ErrExpired},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := auth.New(auth.Options{Realm: realm, Secrets: []string{"north"}, Now: func() time.Time { return tt.now }})
			_, _, err := s.Keys(username, realm)
			if !errors.Is(err, tt.wantErr) {
				t.Errorf("Keys err = %v, want %v", err, tt.wantErr)
			}
		})
	}
}

func TestNewCopiesOptions(t *testing.T) {
	users := map[string]string{"alice": "s3cret"}
	secrets := []string{"north"}
	s := auth.New(auth.Options{Realm: realm, Users: users, Secrets: secrets, Now: fixedNow})
	users["alice"] = "changed"
	users["mallory"] = "x"
	secrets[0] = "changed"

	_, keys, err := s.Keys("alice", realm)
	if err != nil || hex.EncodeToString(keys[0]) != hex.EncodeToString(clientKey("alice", realm, "s3cret")) {
		t.Errorf("static key changed after New: %x, %v", keys, err)
	}
	if _, _, err := s.Keys("mallory", realm); !errors.Is(err, auth.ErrUnknownUser) {
		t.Errorf("user added after New was accepted: %v", err)
	}
	username := strconv.FormatInt(now.Unix()+60, 10)
	_, keys, err = s.Keys(username, realm)
	if err != nil || hex.EncodeToString(keys[0]) != hex.EncodeToString(clientKey(username, realm, clientPassword("north", username))) {
		t.Errorf("secret changed after New: %x, %v", keys, err)
	}
}

func TestRealm(t *testing.T) {
	if got := auth.New(auth.Options{Realm: realm}).Realm(); got != realm {
		t.Errorf("Realm() = %q, want %q", got, realm)
	}
}

func TestDefaultNow(t *testing.T) {
	s := auth.New(auth.Options{Realm: realm, Secrets: []string{"north"}})
	future := strconv.FormatInt(time.Now().Add(time.Hour).Unix(), 10)
	if _, _, err := s.Keys(future, realm); err != nil {
		t.Errorf("future expiry with the real clock: %v", err)
	}
	past := strconv.FormatInt(time.Now().Add(-time.Hour).Unix(), 10)
	if _, _, err := s.Keys(past, realm); !errors.Is(err, auth.ErrExpired) {
		t.Errorf("past expiry with the real clock: %v", err)
	}
}

func TestKeysConcurrent(t *testing.T) {
	s := auth.New(auth.Options{Realm: realm, Users: map[string]string{"alice": "s3cret"}, Secrets: []string{"a", "b"}, Now: fixedNow})
	username := strconv.FormatInt(now.Unix()+60, 10) + ":bob"
	done := make(chan error)
	for range 8 {
		go func() {
			for range 200 {
				if _, _, err := s.Keys("alice", realm); err != nil {
					done <- err
					return
				}
				if _, _, err := s.Keys(username, realm); err != nil {
					done <- err
					return
				}
			}
			done <- nil
		}()
	}
	for range 8 {
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
}

func BenchmarkKeysStatic(b *testing.B) {
	s := auth.New(auth.Options{Realm: realm, Users: map[string]string{"alice": "s3cret"}, Now: fixedNow})
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := s.Keys("alice", realm); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkKeysREST(b *testing.B) {
	s := auth.New(auth.Options{Realm: realm, Secrets: []string{"north", "south"}, Now: fixedNow})
	username := strconv.FormatInt(now.Unix()+60, 10) + ":bob"
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := s.Keys(username, realm); err != nil {
			b.Fatal(err)
		}
	}
}

// TestDecoyIsUnguessable: the decoy key is one key, differs from store to
// store (it comes from a random password) and from the key of a user.
func TestDecoyIsUnguessable(t *testing.T) {
	o := auth.Options{Realm: "r", Users: map[string]string{"u": "p"}}
	a, b := auth.New(o), auth.New(o)
	if len(a.Decoy()) != 1 || len(a.Decoy()[0]) != 16 {
		t.Fatalf("decoy %x, want one 16-byte key", a.Decoy())
	}
	if bytes.Equal(a.Decoy()[0], b.Decoy()[0]) {
		t.Fatal("two stores share a decoy key")
	}
	if bytes.Equal(a.Decoy()[0], auth.LongTermKey("", "r", "")) || bytes.Equal(a.Decoy()[0], auth.LongTermKey("u", "r", "p")) {
		t.Fatal("the decoy is a key a client can compute")
	}
}

// TestMaxValidity: a REST username expiring further ahead than MaxValidity
// is refused (year 9999 included); one within it, or any with no cap, works.
func TestMaxValidity(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	name := func(d time.Duration) string { return strconv.FormatInt(now.Add(d).Unix(), 10) + ":alice" }
	capped := auth.New(auth.Options{Realm: realm, Secrets: []string{"s"}, Now: func() time.Time { return now }, MaxValidity: 24 * time.Hour})
	open := auth.New(auth.Options{Realm: realm, Secrets: []string{"s"}, Now: func() time.Time { return now }})
	for _, tt := range []struct {
		user    string
		wantErr error
	}{
		{name(24 * time.Hour), nil},
		{name(24*time.Hour + time.Second), auth.ErrTooLong},
		{"253402300799:alice", auth.ErrTooLong},
	} {
		if _, _, err := capped.Keys(tt.user, realm); !errors.Is(err, tt.wantErr) {
			t.Errorf("capped at 24h, %s: %v, want %v", tt.user, err, tt.wantErr)
		}
		if _, _, err := open.Keys(tt.user, realm); err != nil {
			t.Errorf("no cap, %s: %v", tt.user, err)
		}
	}
}
