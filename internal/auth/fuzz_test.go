package auth_test

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

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

// FuzzNonceCheck checks that no string makes Check panic, that every refusal
// is a documented one, and that Check accepts a string only if it is the very
// nonce issued at the time it carries, within that nonce's lifetime.
func FuzzNonceCheck(f *testing.F) {
	secret := bytes.Repeat([]byte{7}, auth.NonceSecretLen)
	n, err := auth.NewNonces(secret, 0)
	if err != nil {
		f.Fatal(err)
	}
	other, err := auth.NewNonces(nil, 0)
	if err != nil {
		f.Fatal(err)
	}
	for _, seed := range []struct {
		nonce string
		at    int64
	}{
		{n.Issue(now), now.Unix()},
		{n.Issue(now), now.Unix() + 3599},
		{n.Issue(now), now.Unix() + 3600},
		{n.Issue(now), now.Unix() - 6},
		{n.Issue(time.Unix(0, 0)), 0},
		{n.Issue(time.Unix(1<<32-1, 0)), -1},
		{other.Issue(now), now.Unix()},
		{nonCanonical(n.Issue(now)), now.Unix()},
		{"", now.Unix()},
		{"obMatJos2AAAAAAAAAAAAA", now.Unix()},
		{strings.Repeat("\n", auth.NonceLen), 0},
	} {
		f.Add(seed.nonce, seed.at)
	}
	f.Fuzz(func(t *testing.T, nonce string, at int64) {
		clock := time.Unix(at, 0)
		err := n.Check(nonce, clock)
		switch {
		case err == nil:
			raw, derr := base64.RawURLEncoding.DecodeString(nonce)
			if derr != nil || len(raw) != 16 {
				t.Fatalf("accepted %q, which decodes to %d bytes (%v)", nonce, len(raw), derr)
			}
			issued := time.Unix(int64(binary.BigEndian.Uint32(raw)), 0)
			if again := n.Issue(issued); again != nonce {
				t.Fatalf("accepted %q, but its time %v issues %q", nonce, issued, again)
			}
			if age := clock.Sub(issued); age >= n.Lifetime() || age < -auth.NonceSkew {
				t.Fatalf("accepted %q of age %v at %v", nonce, age, clock)
			}
		case errors.Is(err, auth.ErrNonceMalformed), errors.Is(err, auth.ErrNonceForged), errors.Is(err, auth.ErrNonceStale):
		default:
			t.Fatalf("undocumented error %v", err)
		}
	})
}

// nonCanonical returns nonce with the unused low bits of its last character
// set: the same bytes to a lax base64 decoder, another string.
func nonCanonical(nonce string) string {
	last := strings.IndexByte(base64URL, nonce[len(nonce)-1])
	return nonce[:len(nonce)-1] + string(base64URL[last|1])
}
