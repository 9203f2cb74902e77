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

// tokenGuard is one bearer token endpoint family: the file its token is
// read from on every request (a new token needs no restart) and its name,
// for the answers and the realm a 401 names.
type tokenGuard struct {
	file string
	name string // admin, credentials
}

// requireToken wraps an admin handler: 401 without the right bearer token.
func (a *API) requireToken(next http.HandlerFunc) http.HandlerFunc {
	return a.guard(tokenGuard{file: a.opts.Admin.TokenFile, name: "admin"}, next)
}

// guard wraps next: 401 without the bearer token held in g's file, 503
// when that file cannot be used.
func (a *API) guard(tg tokenGuard, next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		want, err := readToken(tg.file)
		if err != nil {
			// The file is the operator's to fix; the client learns nothing.
			if a.opts.Admin.Problem != nil {
				a.opts.Admin.Problem(err)
			}
			http.Error(w, tg.name+" token unavailable", http.StatusServiceUnavailable)
			return
		}
		got, ok := bearer(r)
		// Hashed first: ConstantTimeCompare returns early on unequal lengths.
		g, h := sha256.Sum256([]byte(got)), sha256.Sum256(want)
		if !ok || subtle.ConstantTimeCompare(g[:], h[:]) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="turnd `+tg.name+`"`)
			http.Error(w, tg.name+" token required", http.StatusUnauthorized)
			return
		}
		next(w, r)
	}
}

// readToken reads a token file: its content without surrounding white
// space (a trailing newline), which must not be empty. A file every user may
// write is refused: whoever wrote the token holds what it guards.
func readToken(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read token: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("read token: %w", err)
	}
	if fi.Mode().Perm()&0o002 != 0 {
		return nil, fmt.Errorf("read token %s: %w", path, ErrTokenWorldWritable)
	}
	b, err := io.ReadAll(f)
	if err != nil {
		return nil, fmt.Errorf("read token: %w", err)
	}
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return nil, fmt.Errorf("read token %s: %w", path, ErrEmptyToken)
	}
	return b, nil
}

// TokenFileWarning returns what is wrong with the permissions of the admin
// token file at path, for a warning at start and on reload, or "" when
// nothing is (or the file cannot be read: each admin request then says why).
// Group read stays quiet: the systemd setup gives the file to turnd's group.
func TokenFileWarning(path string) string {
	return tokenFileWarning(path, "admin token file", "the admin endpoints refuse it", "list and end calls")
}

// CredentialsTokenFileWarning is TokenFileWarning for
// fleet.credentials.token_file.
func CredentialsTokenFileWarning(path string) string {
	return tokenFileWarning(path, "credentials token file", "GET /credentials refuses it", "get TURN credentials")
}

// tokenFileWarning words the warning for the file named what, whose
// endpoints' refusal is said by refusal and whose token lets its holder
// power.
func tokenFileWarning(path, what, refusal, power string) string {
	fi, err := os.Stat(path)
	if err != nil {
		return ""
	}
	perm := fi.Mode().Perm()
	if perm&0o002 != 0 {
		return fmt.Sprintf("%s %s is writable by every user (mode %04o): %s until it is not (chmod o-rw)",
			what, path, perm, refusal)
	}
	var bad []string
	if perm&0o004 != 0 {
		bad = append(bad, "readable by every user")
	}
	if perm&0o020 != 0 {
		bad = append(bad, "writable by its group")
	}
	if len(bad) == 0 {
		return ""
	}
	return fmt.Sprintf("%s %s is %s (mode %04o): whoever reads or writes the token can %s; chmod o-r,g-w it",
		what, path, strings.Join(bad, " and "), perm, power)
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
