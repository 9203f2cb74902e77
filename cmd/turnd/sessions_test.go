package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/turnd/turnd/internal/traffic"
	"github.com/turnd/turnd/pkg/allocation"
	"github.com/turnd/turnd/pkg/httpapi"
)

// adminServer serves the real admin endpoints over n fake allocations of
// alice behind the token "tok"; it returns its address, a token file and
// the disconnect requests it received.
func adminServer(t *testing.T, n int, tokenFile string) (string, string, *[]string) {
	t.Helper()
	dir := t.TempDir()
	good := filepath.Join(dir, "good")
	if err := os.WriteFile(good, []byte("tok\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if tokenFile == "" {
		tokenFile = good
	}
	var infos []allocation.Info
	for i := 0; i < n; i++ {
		infos = append(infos, allocation.Info{User: "alice", Transport: allocation.UDP, Created: time.Now().Add(-time.Minute),
			Client: &net.UDPAddr{IP: net.IPv4(192, 0, 2, 1), Port: 1000 + i}, Relay: &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 50000 + i}})
	}
	asked := &[]string{}
	srv := httptest.NewServer(httpapi.New(httpapi.Options{Admin: httpapi.Admin{
		TokenFile:  tokenFile,
		Sessions:   func(string) []allocation.Info { return infos },
		Usage:      func(allocation.Info) traffic.Usage { return traffic.Usage{ToPeerBytes: 1500, Channels: 1} },
		Disconnect: func(user, id, _ string) int { *asked = append(*asked, user+id); return len(infos) },
	}}))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://"), good, asked
}

// TestSessionsCommandFetchesEveryPage: the table and --json hold every
// live allocation, past one page of /sessions.
func TestSessionsCommandFetchesEveryPage(t *testing.T) {
	addr, token, _ := adminServer(t, 150, "")
	var out, errOut bytes.Buffer
	if code := run([]string{"sessions", "--http", addr, "--token-file", token}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 151 || !strings.HasPrefix(lines[0], "ID ") ||
		!strings.Contains(lines[150], "127.0.0.1:50149") || !strings.Contains(lines[1], "1.5 kB") {
		t.Fatalf("%d lines:\n%s", len(lines), out.String())
	}
	out.Reset()
	if code := run([]string{"sessions", "--http", addr, "--token-file", token, "--json"}, &out, &errOut); code != 0 {
		t.Fatalf("--json: exit %d: %s", code, errOut.String())
	}
	var page httpapi.SessionPage
	if err := json.Unmarshal(out.Bytes(), &page); err != nil || page.Total != 150 || len(page.Sessions) != 150 {
		t.Fatalf("--json: %d of %d sessions (%v)", len(page.Sessions), page.Total, err)
	}
}

// TestDisconnectCommand: the token is required and checked; exactly one
// of --user and --id.
func TestDisconnectCommand(t *testing.T) {
	addr, token, asked := adminServer(t, 2, "")
	wrong := filepath.Join(t.TempDir(), "wrong")
	if err := os.WriteFile(wrong, []byte("nope"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		args     []string
		code     int
		out, err string
	}{
		{[]string{"--user", "alice", "--token-file", token}, 0, "disconnected 2 allocations", ""},
		{[]string{"--id", "127.0.0.1:50000", "--token-file", token}, 0, "disconnected 2 allocations", ""},
		{[]string{"--user", "alice", "--token-file", wrong}, 1, "", "refused the admin token (401)"},
		{[]string{"--user", "alice"}, 1, "", "no admin token file"},
		{[]string{"--token-file", token}, 2, "", "exactly one of --user and --id"},
		{[]string{"--user", "a", "--id", "b", "--token-file", token}, 2, "", "exactly one of --user and --id"},
	}
	for _, tc := range tests {
		var out, errOut bytes.Buffer
		code := run(append([]string{"disconnect", "--http", addr}, tc.args...), &out, &errOut)
		if code != tc.code || !strings.Contains(out.String(), tc.out) || !strings.Contains(errOut.String(), tc.err) {
			t.Errorf("disconnect %v: exit %d, out %q, err %q; want %d, %q, %q", tc.args, code, out.String(), errOut.String(),
				tc.code, tc.out, tc.err)
		}
	}
	if fmt.Sprint(*asked) != "[alice 127.0.0.1:50000]" {
		t.Fatalf("turnd was asked %v", *asked)
	}
}

// TestAdminCommandsAgainstATurndWithoutToken: a turnd with no token file
// serves no admin endpoints, and the commands say how to turn them on.
func TestAdminCommandsAgainstATurndWithoutToken(t *testing.T) {
	srv := httptest.NewServer(httpapi.New(httpapi.Options{}))
	defer srv.Close()
	token := filepath.Join(t.TempDir(), "tok")
	if err := os.WriteFile(token, []byte("tok"), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	addr := strings.TrimPrefix(srv.URL, "http://")
	if code := run([]string{"sessions", "--http", addr, "--token-file", token}, &out, &errOut); code != 1 ||
		!strings.Contains(errOut.String(), "http.admin_token_file") {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
}
