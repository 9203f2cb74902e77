package auth_test

import (
	"crypto/hmac"
	"crypto/md5"
	"crypto/sha1"
	"encoding/base64"
	"encoding/hex"
	"testing"

	"github.com/turnd/turnd/internal/auth"
)

// The hex and base64 vectors below were computed outside Go, with coreutils
// md5sum and openssl dgst, so they check the implementation independently.
func TestLongTermKey(t *testing.T) {
	got := auth.LongTermKey("alice", "turnd.local", "s3cret")
	if want := "913065cb0b385269ca54b39a74f13b37"; hex.EncodeToString(got) != want {
		t.Errorf("LongTermKey = %x, want %s", got, want)
	}
	sum := md5.Sum([]byte("alice:turnd.local:s3cret"))
	if !hmac.Equal(got, sum[:]) {
		t.Errorf("LongTermKey = %x, crypto/md5 gives %x", got, sum)
	}
}

func TestRESTPassword(t *testing.T) {
	got := auth.RESTPassword("north", "1700000000:alice")
	if want := "Cd/49soE35ICqcJF/bCTn8Z4OyE="; got != want {
		t.Errorf("RESTPassword = %q, want %q", got, want)
	}
	if want := clientPassword("north", "1700000000:alice"); got != want {
		t.Errorf("RESTPassword = %q, crypto/hmac gives %q", got, want)
	}
}

// clientPassword is what a credential service or client computes, written
// out here rather than calling the package under test.
func clientPassword(secret, username string) string {
	mac := hmac.New(sha1.New, []byte(secret))
	mac.Write([]byte(username))
	return base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

// clientKey is the long-term key a client derives from its credentials.
func clientKey(username, realm, password string) []byte {
	sum := md5.Sum([]byte(username + ":" + realm + ":" + password))
	return sum[:]
}
