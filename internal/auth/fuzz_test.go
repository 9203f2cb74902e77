package auth_test

import (
	"errors"
	"strconv"
	"testing"

	"github.com/turnd/turnd/internal/auth"
)

// FuzzKeys checks that no username, realm or separator makes Keys panic, and
// that every outcome is one of the documented ones.
func FuzzKeys(f *testing.F) {
	future := strconv.FormatInt(now.Unix()+60, 10)
	for _, seed := range []struct{ username, realm, sep string }{
		{"alice", realm, ":"},
		{future, realm, ":"},
		{future + ":bob", realm, ":"},
		{future + "-bob", realm, "-"},
		{"0:bob", realm, ":"},
		{"-1:bob", realm, ":"},
		{"99999999999999999999:bob", realm, ":"},
		{":", realm, ":"},
		{"", "", ""},
		{"\xff\x00:", realm, "\x00"},
		{future + ":bob", "other", ":"},
	} {
		f.Add(seed.username, seed.realm, seed.sep)
	}
	f.Fuzz(func(t *testing.T, username, reqRealm, sep string) {
		s := auth.New(auth.Options{
			Realm:     realm,
			Users:     map[string]string{"alice": "s3cret"},
			Secrets:   []string{"north", "south"},
			Separator: sep,
			Now:       fixedNow,
		})
		id, keys, err := s.Keys(username, reqRealm)
		switch {
		case err == nil:
			if reqRealm != realm {
				t.Fatalf("accepted realm %q", reqRealm)
			}
			if id == "" || len(keys) == 0 {
				t.Fatalf("success with id %q and %d keys", id, len(keys))
			}
			for _, k := range keys {
				if len(k) != 16 {
					t.Fatalf("key of %d bytes", len(k))
				}
			}
		case errors.Is(err, auth.ErrUnknownUser), errors.Is(err, auth.ErrExpired), errors.Is(err, auth.ErrRealmMismatch):
		default:
			t.Fatalf("undocumented error %v", err)
		}
	})
}
