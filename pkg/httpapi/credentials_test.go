package httpapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/turnd/turnd/pkg/httpapi"
)

// TestCredentialsEndpoint: its own token, not the admin one; a user is
// required; the answer has the REST API draft's fields and is not cached.
func TestCredentialsEndpoint(t *testing.T) {
	f := newFleetFixture(t, credentialsFile(t))
	for _, auth := range []string{"", "Bearer " + token, "Bearer " + credToken + "x", "Basic " + credToken} {
		rec := adminDo(t, f.api, "GET", "/credentials?user=alice", auth)
		if rec.Code != http.StatusUnauthorized || rec.Header().Get("WWW-Authenticate") != `Bearer realm="turnd credentials"` {
			t.Errorf("auth %q: %d %q, want 401 with the credentials realm", auth, rec.Code, rec.Header().Get("WWW-Authenticate"))
		}
	}
	if f.credsUser != "" {
		t.Fatalf("credentials made without the token, for %q", f.credsUser)
	}
	// The credentials token lists and ends nothing.
	if rec := adminDo(t, f.api, "GET", "/sessions", "Bearer "+credToken); rec.Code != http.StatusUnauthorized {
		t.Errorf("/sessions with the credentials token: %d, want 401", rec.Code)
	}
	for _, bad := range []string{"/credentials", "/credentials?user="} {
		if rec := adminDo(t, f.api, "GET", bad, "Bearer "+credToken); rec.Code != http.StatusBadRequest {
			t.Errorf("GET %s: %d, want 400", bad, rec.Code)
		}
	}
	if rec := adminDo(t, f.api, "POST", "/credentials?user=alice", "Bearer "+credToken); rec.Code != http.StatusMethodNotAllowed {
		t.Errorf("POST /credentials: %d, want 405", rec.Code)
	}

	rec := adminDo(t, f.api, "GET", "/credentials?user=alice", "Bearer "+credToken)
	if rec.Code != http.StatusOK || rec.Header().Get("Content-Type") != "application/json" ||
		rec.Header().Get("Cache-Control") != "no-store" {
		t.Fatalf("credentials: %d %v %s", rec.Code, rec.Header(), rec.Body.String())
	}
	var doc map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	want := "map[password:cGFzcw== ttl:3600 uris:[turn:10.0.0.2:3478?transport=udp turn:10.0.0.3:3478?transport=udp] username:1700003600:alice]"
	if fmt.Sprint(doc) != want || f.credsUser != "alice" {
		t.Errorf("answer %v for %q, want %s", doc, f.credsUser, want)
	}
}

// TestCredentialsErrors: a user no username can carry is 400, the fleet
// unable to answer 503, anything else 500, each with a fixed text; no URIs is an empty list, not
// null.
func TestCredentialsErrors(t *testing.T) {
	f := newFleetFixture(t, credentialsFile(t))
	f.credsErr = fmt.Errorf("credentials for %q: %w", "a\nb", httpapi.ErrBadUser)
	if rec := adminDo(t, f.api, "GET", "/credentials?user=a%0Ab", "Bearer "+credToken); rec.Code != http.StatusBadRequest {
		t.Errorf("bad user: %d, want 400", rec.Code)
	}
	f.credsErr = fmt.Errorf("make credentials: no node ready: %w", httpapi.ErrUnavailable)
	rec := adminDo(t, f.api, "GET", "/credentials?user=alice", "Bearer "+credToken)
	// The backend is told a fixed text: the error may name Redis.
	if rec.Code != http.StatusServiceUnavailable || strings.Contains(rec.Body.String(), "no node ready") ||
		!strings.Contains(rec.Body.String(), "cannot name a ready node") {
		t.Errorf("fleet unavailable: %d %q, want 503 with the fixed text", rec.Code, rec.Body.String())
	}
	f.credsErr = errors.New("something else")
	if rec := adminDo(t, f.api, "GET", "/credentials?user=alice", "Bearer "+credToken); rec.Code != http.StatusInternalServerError {
		t.Errorf("another error: %d, want 500", rec.Code)
	}

	api := httpapi.New(httpapi.Options{Fleet: httpapi.Fleet{CredentialsTokenFile: credentialsFile(t),
		Credentials: func(context.Context, string) (httpapi.Credentials, error) {
			return httpapi.Credentials{Username: "1:a", Password: "p", TTL: 1}, nil
		}}})
	rec = adminDo(t, api, "GET", "/credentials?user=a", "Bearer "+credToken)
	if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `"uris": []`) {
		t.Errorf("no URIs: %d %s, want an empty list", rec.Code, rec.Body.String())
	}
}

// TestCredentialsOff: no token file, or no fleet, no endpoint (404).
func TestCredentialsOff(t *testing.T) {
	off := newFleetFixture(t, "")
	if rec := adminDo(t, off.api, "GET", "/credentials?user=alice", "Bearer "+credToken); rec.Code != http.StatusNotFound {
		t.Errorf("no token file: %d, want 404", rec.Code)
	}
	api := httpapi.New(httpapi.Options{Fleet: httpapi.Fleet{CredentialsTokenFile: credentialsFile(t)}})
	if rec := adminDo(t, api, "GET", "/credentials?user=alice", "Bearer "+credToken); rec.Code != http.StatusNotFound {
		t.Errorf("no fleet: %d, want 404", rec.Code)
	}
}

// TestCredentialsTokenFileProblems: an empty, missing or world-writable
// token file refuses every request (503) and tells the operator, as the
// admin one does; the warning names the credentials file.
func TestCredentialsTokenFileProblems(t *testing.T) {
	path := credentialsFile(t)
	var problems []error
	api := httpapi.New(httpapi.Options{
		Admin: httpapi.Admin{Problem: func(err error) { problems = append(problems, err) }},
		Fleet: httpapi.Fleet{CredentialsTokenFile: path, Credentials: func(context.Context, string) (httpapi.Credentials, error) {
			t.Error("credentials made from an unusable token file")
			return httpapi.Credentials{}, nil
		}},
	})
	if err := os.Chmod(path, 0o606); err != nil {
		t.Fatal(err)
	}
	if w := httpapi.CredentialsTokenFileWarning(path); !strings.Contains(w, "credentials token file "+path+" is writable by every user") ||
		!strings.Contains(w, "GET /credentials refuses it") {
		t.Errorf("warning %q", w)
	}
	if rec := adminDo(t, api, "GET", "/credentials?user=a", "Bearer "+credToken); rec.Code != http.StatusServiceUnavailable {
		t.Errorf("world-writable: %d, want 503", rec.Code)
	}
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		t.Fatal(err)
	}
	if rec := adminDo(t, api, "GET", "/credentials?user=a", "Bearer "); rec.Code != http.StatusServiceUnavailable {
		t.Errorf("empty: %d, want 503", rec.Code)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if rec := adminDo(t, api, "GET", "/credentials?user=a", "Bearer "+credToken); rec.Code != http.StatusServiceUnavailable {
		t.Errorf("missing: %d, want 503", rec.Code)
	}
	if len(problems) != 3 || !errors.Is(problems[0], httpapi.ErrTokenWorldWritable) || !errors.Is(problems[1], httpapi.ErrEmptyToken) ||
		!errors.Is(problems[2], os.ErrNotExist) {
		t.Errorf("problems %v", problems)
	}
	if w := httpapi.CredentialsTokenFileWarning(filepath.Join(t.TempDir(), "x")); w != "" {
		t.Errorf("missing file: warning %q", w)
	}
}
