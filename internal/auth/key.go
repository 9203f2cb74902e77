package auth

import (
	"crypto/hmac"
	"crypto/md5"  //nolint:gosec // RFC 5389 section 15.4 defines the long-term key as MD5.
	"crypto/sha1" //nolint:gosec // The TURN REST API defines the password as HMAC-SHA1.
	"encoding/base64"
)

// LongTermKey returns the RFC 5389 long-term credential key,
// MD5("username:realm:password"), used to compute MESSAGE-INTEGRITY.
func LongTermKey(username, realm, password string) []byte {
	h := md5.New() //nolint:gosec // Mandated by RFC 5389, not a choice.
	// Writing the parts separately avoids building the joined string.
	h.Write([]byte(username))
	h.Write([]byte{':'})
	h.Write([]byte(realm))
	h.Write([]byte{':'})
	h.Write([]byte(password))
	return h.Sum(nil)
}

// RESTPassword returns the TURN REST API password for username under secret:
// base64(HMAC-SHA1(secret, username)), as coturn's use-auth-secret expects and
// as the web service handing out credentials computes it.
func RESTPassword(secret, username string) string {
	mac := hmac.New(sha1.New, []byte(secret))
	mac.Write([]byte(username))
	return base64.StdEncoding.EncodeToString(mac.Sum(nil))
}
