package httpapi_test

import (
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/turnd/turnd/internal/traffic"
	"github.com/turnd/turnd/pkg/allocation"
	"github.com/turnd/turnd/pkg/httpapi"
)

const token = "s3cret-admin-token"

// adminAPI serves n allocations of alice (and one of bob) behind a token
// file holding token; disconnects are recorded in asked.
func adminAPI(t *testing.T, n int, asked *[]string) (*httpapi.API, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(path, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now().Add(-2 * time.Hour)
	var infos []allocation.Info
	for i := 0; i < n; i++ {
		infos = append(infos, allocation.Info{User: "alice", Transport: allocation.UDP, Created: t0.Add(time.Duration(i)),
			Client: &net.UDPAddr{IP: net.IPv4(192, 0, 2, 1), Port: 40000 + i}, Relay: &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 50000 + i}})
	}
	infos = append(infos, allocation.Info{User: "bob", Transport: allocation.TCP, Created: t0.Add(time.Hour),
		Client: &net.TCPAddr{IP: net.IPv4(192, 0, 2, 2), Port: 1}, Relay: &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 60000}})
	api := httpapi.New(httpapi.Options{Admin: httpapi.Admin{
		TokenFile: path,
		Sessions: func(user string) []allocation.Info {
			var out []allocation.Info
			for _, info := range infos {
				if user == "" || info.User == user {
					out = append(out, info)
				}
			}
			return out
		},
		Usage: func(info allocation.Info) traffic.Usage {
			return traffic.Usage{ToPeerBytes: uint64(info.Relay.(*net.UDPAddr).Port), Permissions: 1}
		},
		Disconnect: func(user, id, by string) int {
			*asked = append(*asked, user+"|"+id+"|"+by)
			return 1
		},
	}})
	return api, path
}

func adminDo(t *testing.T, api http.Handler, method, target, auth string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(method, target, nil)
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	req.Header.Set(httpapi.OperatorHeader, "ops-alice")
	rec := httptest.NewRecorder()
	api.ServeHTTP(rec, req)
	return rec
}

// TestAdminEndpointsNeedTheToken: without the right bearer token both
// admin endpoints answer 401 and do nothing; the open endpoints stay open.
func TestAdminEndpointsNeedTheToken(t *testing.T) {
	var asked []string
	api, _ := adminAPI(t, 1, &asked)
	for _, auth := range []string{"", "Bearer wrong", "Basic " + token, "Bearer " + token + "x", "Bearer"} {
		for _, r := range []struct{ method, target string }{
			{"GET", "/sessions"}, {"POST", "/sessions/disconnect?user=alice"},
		} {
			rec := adminDo(t, api, r.method, r.target, auth)
			if rec.Code != http.StatusUnauthorized || !strings.HasPrefix(rec.Header().Get("WWW-Authenticate"), "Bearer") {
				t.Errorf("%s %s with %q: %d, want 401 with a Bearer challenge", r.method, r.target, auth, rec.Code)
			}
			if strings.Contains(rec.Body.String(), token) {
				t.Errorf("the answer shows the token: %q", rec.Body.String())
			}
		}
	}
	if len(asked) != 0 {
		t.Fatalf("disconnect ran without the token: %v", asked)
	}
	if rec := adminDo(t, api, "GET", "/healthz", ""); rec.Code != http.StatusOK {
		t.Fatalf("/healthz without a token: %d", rec.Code)
	}
	if rec := adminDo(t, api, "GET", "/sessions", "bearer "+token); rec.Code != http.StatusOK {
		t.Fatalf("the right token (scheme in lower case): %d", rec.Code)
	}
}

// TestAdminEndpointsOffWithoutATokenFile: no token file configured, no
// admin endpoints (404), whatever the request carries.
func TestAdminEndpointsOffWithoutATokenFile(t *testing.T) {
	api := httpapi.New(httpapi.Options{Admin: httpapi.Admin{
		Sessions:   func(string) []allocation.Info { t.Fatal("sessions listed"); return nil },
		Disconnect: func(string, string, string) int { t.Fatal("disconnected"); return 0 },
	}})
	for _, target := range []string{"/sessions", "/sessions/disconnect?user=alice"} {
		method := "GET"
		if strings.Contains(target, "disconnect") {
			method = "POST"
		}
		if rec := adminDo(t, api, method, target, "Bearer anything"); rec.Code != http.StatusNotFound {
			t.Errorf("%s %s: %d, want 404", method, target, rec.Code)
		}
	}
}

// TestAdminTokenFileUnreadableIs503: a token file that is missing or
// empty refuses every admin request rather than letting any through.
func TestAdminTokenFileUnreadableIs503(t *testing.T) {
	var asked []string
	for _, content := range []string{"", "  \n"} {
		api, path := adminAPI(t, 1, &asked)
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		for _, auth := range []string{"Bearer ", "Bearer " + token} {
			if rec := adminDo(t, api, "GET", "/sessions", auth); rec.Code != http.StatusServiceUnavailable {
				t.Errorf("empty token file %q, auth %q: %d, want 503", content, auth, rec.Code)
			}
		}
		os.Remove(path)
		if rec := adminDo(t, api, "GET", "/sessions", "Bearer "+token); rec.Code != http.StatusServiceUnavailable {
			t.Errorf("missing token file: %d, want 503", rec.Code)
		}
	}
}

// TestSessionsPagesAndFilters: /sessions pages through the live
// allocations in order and filters by user.
func TestSessionsPagesAndFilters(t *testing.T) {
	var asked []string
	api, _ := adminAPI(t, 5, &asked)
	var ports []int
	next := "/sessions?limit=2"
	for pages := 0; next != ""; pages++ {
		if pages > 5 {
			t.Fatal("paging does not end")
		}
		rec := adminDo(t, api, "GET", next, "Bearer "+token)
		var page httpapi.SessionPage
		if rec.Code != http.StatusOK || json.Unmarshal(rec.Body.Bytes(), &page) != nil || page.Total != 6 {
			t.Fatalf("GET %s: %d %s", next, rec.Code, rec.Body.String())
		}
		for _, s := range page.Sessions {
			ports = append(ports, int(s.ToPeerBytes))
			if s.ID != s.Relay || s.Permissions != 1 || s.DurationSeconds < 1 {
				t.Errorf("session %+v", s)
			}
		}
		next = ""
		if page.NextOffset != nil {
			next = "/sessions?limit=2&offset=" + strconv.Itoa(*page.NextOffset)
		}
	}
	if want := []int{50000, 50001, 50002, 50003, 50004, 60000}; !slices.Equal(ports, want) {
		t.Fatalf("paged through %v, want %v", ports, want)
	}
	rec := adminDo(t, api, "GET", "/sessions?user=bob", "Bearer "+token)
	var page httpapi.SessionPage
	if err := json.Unmarshal(rec.Body.Bytes(), &page); err != nil || page.Total != 1 || page.Sessions[0].Transport != "tcp" ||
		page.NextOffset != nil {
		t.Fatalf("bob's sessions: %s (%v)", rec.Body.String(), err)
	}
	for _, bad := range []string{"/sessions?limit=0", "/sessions?offset=-1", "/sessions?limit=x"} {
		if rec := adminDo(t, api, "GET", bad, "Bearer "+token); rec.Code != http.StatusBadRequest {
			t.Errorf("GET %s: %d, want 400", bad, rec.Code)
		}
	}
}

// TestDisconnectEndpoint: one of user and id, and the log learns who asked.
func TestDisconnectEndpoint(t *testing.T) {
	var asked []string
	api, _ := adminAPI(t, 1, &asked)
	for _, bad := range []string{"/sessions/disconnect", "/sessions/disconnect?user=a&id=b"} {
		if rec := adminDo(t, api, "POST", bad, "Bearer "+token); rec.Code != http.StatusBadRequest {
			t.Errorf("POST %s: %d, want 400", bad, rec.Code)
		}
	}
	if rec := adminDo(t, api, "GET", "/sessions/disconnect?user=alice", "Bearer "+token); rec.Code != http.StatusMethodNotAllowed {
		t.Errorf("GET disconnect: %d, want 405", rec.Code)
	}
	rec := adminDo(t, api, "POST", "/sessions/disconnect?id=127.0.0.1:50000", "Bearer "+token)
	var got httpapi.Disconnected
	if rec.Code != http.StatusOK || json.Unmarshal(rec.Body.Bytes(), &got) != nil || got.Disconnected != 1 {
		t.Fatalf("disconnect: %d %s", rec.Code, rec.Body.String())
	}
	if len(asked) != 1 || !strings.HasPrefix(asked[0], "|127.0.0.1:50000|http ") || !strings.HasSuffix(asked[0], "operator ops-alice") {
		t.Fatalf("disconnect asked %v", asked)
	}
}

// TestSessionsOffsetPastTheEnd: an offset at or past the last allocation,
// up to the largest int, answers an empty page with no next_offset, where
// offset+limit would overflow into a negative one.
func TestSessionsOffsetPastTheEnd(t *testing.T) {
	var asked []string
	api, _ := adminAPI(t, 5, &asked)
	srv := httptest.NewServer(api)
	defer srv.Close()
	for _, tc := range []struct {
		query string
		want  int // sessions on the page
	}{
		{"offset=6", 0}, {"offset=7&limit=1000", 0}, {"offset=9223372036854775807", 0},
		{"offset=9223372036854775807&limit=1000", 0}, {"offset=9223372036854775000&limit=1000", 0},
		{"offset=4&limit=9223372036854775807", 2},
	} {
		q := tc.query
		req, err := http.NewRequest("GET", srv.URL+"/sessions?"+q, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var page httpapi.SessionPage
		err = json.NewDecoder(resp.Body).Decode(&page)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || err != nil {
			t.Fatalf("GET /sessions?%s: %d (%v)", q, resp.StatusCode, err)
		}
		if page.NextOffset != nil {
			t.Errorf("GET /sessions?%s: next_offset %d, want none", q, *page.NextOffset)
		}
		if len(page.Sessions) != tc.want {
			t.Errorf("GET /sessions?%s: %d sessions, want %d", q, len(page.Sessions), tc.want)
		}
	}
}

// TestAdminTokenFilePermissions: a token file other users can read, or its
// group write, gets a warning; one every user can write is refused (503)
// as well, since whoever wrote it holds the token; owner and group read
// (the systemd setup) are quiet.
func TestAdminTokenFilePermissions(t *testing.T) {
	for _, tc := range []struct {
		mode    os.FileMode
		warning string // "" : none
		refused bool
	}{
		{0o600, "", false},
		{0o640, "", false},
		{0o440, "", false},
		{0o644, "readable by every user (mode 0644)", false},
		{0o444, "readable by every user (mode 0444)", false},
		{0o660, "writable by its group (mode 0660)", false},
		{0o664, "readable by every user and writable by its group", false},
		{0o602, "writable by every user (mode 0602): the admin endpoints refuse it", true},
		{0o666, "writable by every user", true},
	} {
		var asked []string
		api, path := adminAPI(t, 1, &asked)
		if err := os.Chmod(path, tc.mode); err != nil {
			t.Fatal(err)
		}
		w := httpapi.TokenFileWarning(path)
		if (tc.warning == "") != (w == "") || !strings.Contains(w, tc.warning) || tc.warning != "" && !strings.Contains(w, path) {
			t.Errorf("mode %04o: warning %q, want one with %q", tc.mode, w, tc.warning)
		}
		want := http.StatusOK
		if tc.refused {
			want = http.StatusServiceUnavailable
		}
		if rec := adminDo(t, api, "GET", "/sessions", "Bearer "+token); rec.Code != want {
			t.Errorf("mode %04o: /sessions answered %d, want %d", tc.mode, rec.Code, want)
		}
	}
	if w := httpapi.TokenFileWarning(filepath.Join(t.TempDir(), "missing")); w != "" {
		t.Errorf("missing file: warning %q, want none (each request says why)", w)
	}
}
