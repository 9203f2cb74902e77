package httpapi

import (
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
)

// Admin endpoints end calls and list who is calling from where (user names
// and client addresses are personal data), so both /sessions and
// /sessions/disconnect need the bearer token; /status, /metrics and the
// probes stay open. Without a token file configured the admin endpoints
// are not served at all (404): nothing to guess at.

// requireToken wraps an admin handler: 401 without the right bearer token.
func (a *API) requireToken(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		want, err := readToken(a.opts.Admin.TokenFile)
		if err != nil {
			// The file is the operator's to fix; the client learns nothing.
			if a.opts.Admin.Problem != nil {
				a.opts.Admin.Problem(err)
			}
			http.Error(w, "admin token unavailable", http.StatusServiceUnavailable)
			return
		}
		got, ok := bearer(r)
		// Hashed first: ConstantTimeCompare returns early on unequal lengths.
		g, h := sha256.Sum256([]byte(got)), sha256.Sum256(want)
		if !ok || subtle.ConstantTimeCompare(g[:], h[:]) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="turnd admin"`)
			http.Error(w, "admin token required", http.StatusUnauthorized)
			return
		}
		next(w, r)
	}
}

// readToken reads the token file: its content without surrounding white
// space (a trailing newline), which must not be empty. A file every user may
// write is refused: whoever wrote the token could list and end calls.
func readToken(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read admin token: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("read admin token: %w", err)
	}
	if fi.Mode().Perm()&0o002 != 0 {
		return nil, fmt.Errorf("read admin token %s: %w", path, ErrTokenWorldWritable)
	}
	b, err := io.ReadAll(f)
	if err != nil {
		return nil, fmt.Errorf("read admin token: %w", err)
	}
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return nil, fmt.Errorf("read admin token %s: %w", path, ErrEmptyToken)
	}
	return b, nil
}

// TokenFileWarning returns what is wrong with the permissions of the token
// file at path, for a warning at start and on reload, or "" when nothing
// is (or the file cannot be read: each admin request then says why).
// Group read stays quiet: the systemd setup gives the file to turnd's group.
func TokenFileWarning(path string) string {
	fi, err := os.Stat(path)
	if err != nil {
		return ""
	}
	perm := fi.Mode().Perm()
	if perm&0o002 != 0 {
		return fmt.Sprintf("admin token file %s is writable by every user (mode %04o): the admin endpoints refuse it "+
			"until it is not (chmod o-rw)", path, perm)
	}
	var what []string
	if perm&0o004 != 0 {
		what = append(what, "readable by every user")
	}
	if perm&0o020 != 0 {
		what = append(what, "writable by its group")
	}
	if len(what) == 0 {
		return ""
	}
	return fmt.Sprintf("admin token file %s is %s (mode %04o): whoever reads or writes the token can list and end "+
		"calls; chmod o-r,g-w it", path, strings.Join(what, " and "), perm)
}

// bearer returns the request's bearer token.
func bearer(r *http.Request) (string, bool) {
	h := r.Header.Get("Authorization")
	scheme, token, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || token == "" {
		return "", false
	}
	return strings.TrimSpace(token), true
}
