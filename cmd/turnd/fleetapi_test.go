package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/turnd/turnd/internal/traffic"
	"github.com/turnd/turnd/pkg/allocation"
	"github.com/turnd/turnd/pkg/fleet"
	"github.com/turnd/turnd/pkg/httpapi"
	"github.com/turnd/turnd/pkg/metrics"
	"github.com/turnd/turnd/pkg/server"
)

// fakeFleetServer is node n1 of a fleet: its sessions are n sessions of
// alice on n1 and one of bob on n2.
type fakeFleetServer struct {
	mu       sync.Mutex
	off      bool
	n        int
	err      error // what the Redis-backed calls fail with
	credsErr error
	asked    []string
}

func (f *fakeFleetServer) FleetSessions(context.Context) ([]fleet.Session, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return nil, f.err
	}
	t0 := time.Now().Add(-time.Hour)
	var out []fleet.Session
	for i := range f.n {
		id := fmt.Sprintf("127.0.0.1:%d", 50000+i)
		out = append(out, fleet.Session{Node: "n1", ID: id, User: "alice", Client: "192.0.2.1:1", Transport: "udp",
			Relay: id, StartedAt: t0.Add(time.Duration(i) * time.Second)})
	}
	return append(out, fleet.Session{Node: "n2", ID: "10.0.0.2:50000", User: "bob", Client: "192.0.2.2:2",
		Transport: "tcp", Relay: "10.0.0.2:50000", StartedAt: t0.Add(-time.Minute)}), nil
}

func (f *fakeFleetServer) FleetDisconnect(_ context.Context, user, by string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.asked = append(f.asked, "fleet "+user)
	return f.err
}

func (f *fakeFleetServer) Credentials(_ context.Context, user string) (server.Credentials, error) {
	if f.credsErr != nil {
		return server.Credentials{}, f.credsErr
	}
	return server.Credentials{Username: "1700003600:" + user, Password: "cGFzcw==", TTL: 3600,
		URIs: []string{"turn:10.0.0.2:3478?transport=udp"}}, nil
}

func (f *fakeFleetServer) FleetStats() (server.FleetStats, bool) {
	if f.off {
		return server.FleetStats{}, false
	}
	return server.FleetStats{Node: "n1", Up: true, Outages: 1, Held: 2, UsageQueued: 3, UsageDropped: 4,
		OnOutage: "local", Admitted: 5, Refused: 6, Fallback: 7}, true
}

// fleetAdminServer serves the real endpoints over f, behind the admin
// token "tok" and the credentials token "ctok"; it returns its address
// and the admin token file.
func fleetAdminServer(t *testing.T, f *fakeFleetServer) (string, string) {
	t.Helper()
	dir := t.TempDir()
	adminTok, credsTok := filepath.Join(dir, "admin"), filepath.Join(dir, "creds")
	for path, tok := range map[string]string{adminTok: "tok\n", credsTok: "ctok\n"} {
		if err := os.WriteFile(path, []byte(tok), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	srv := httptest.NewServer(httpapi.New(httpapi.Options{
		Admin: httpapi.Admin{
			TokenFile: adminTok,
			Sessions: func(string) []allocation.Info {
				return []allocation.Info{{User: "alice", Transport: allocation.UDP, Created: time.Now().Add(-time.Hour),
					Relay: &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 50000}}}
			},
			Usage: func(allocation.Info) traffic.Usage { return traffic.Usage{ToPeerBytes: 1500} },
			Disconnect: func(user, id, _ string) int {
				f.mu.Lock()
				defer f.mu.Unlock()
				f.asked = append(f.asked, "local "+user+id)
				return 1
			},
		},
		Fleet: fleetAPI(f, credsTok),
	}))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://"), adminTok
}

// TestSessionsFleetCommand: --fleet lists every node's allocations past
// one page, led by their node; --json keeps this node's traffic.
func TestSessionsFleetCommand(t *testing.T) {
	f := &fakeFleetServer{n: 150}
	addr, token := fleetAdminServer(t, f)
	var out, errOut bytes.Buffer
	if code := run([]string{"sessions", "--http", addr, "--token-file", token, "--fleet"}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 152 || !strings.HasPrefix(lines[0], "NODE ") || strings.Contains(lines[0], "TO PEER") ||
		!strings.HasPrefix(lines[1], "n2 ") || !strings.Contains(lines[1], "bob") ||
		!strings.HasPrefix(lines[151], "n1 ") || !strings.Contains(lines[151], "127.0.0.1:50149") {
		t.Fatalf("%d lines:\n%s", len(lines), out.String())
	}
	out.Reset()
	if code := run([]string{"sessions", "--http", addr, "--token-file", token, "--fleet", "--json", "--user", "alice"}, &out, &errOut); code != 0 {
		t.Fatalf("--json: exit %d: %s", code, errOut.String())
	}
	var page httpapi.SessionPage
	if err := json.Unmarshal(out.Bytes(), &page); err != nil || page.Total != 150 || len(page.Sessions) != 150 ||
		page.Sessions[0].Node != "n1" || page.Sessions[0].ToPeerBytes != 1500 || page.Sessions[1].ToPeerBytes != 0 {
		t.Fatalf("--json --user alice: %d of %d sessions, first %+v (%v)", len(page.Sessions), page.Total, page.Sessions[0], err)
	}

	// Redis down: the command says why and fails.
	f.mu.Lock()
	f.err = errors.New("list fleet sessions: fleet unavailable")
	f.mu.Unlock()
	errOut.Reset()
	if code := run([]string{"sessions", "--http", addr, "--token-file", token, "--fleet"}, &out, &errOut); code != 1 ||
		!strings.Contains(errOut.String(), "503") || !strings.Contains(errOut.String(), "fleet unavailable") {
		t.Fatalf("Redis down: exit %d: %s", code, errOut.String())
	}
}

// TestSessionsFleetOnASingleNode: --fleet against a node in no fleet says
// so.
func TestSessionsFleetOnASingleNode(t *testing.T) {
	addr, token := fleetAdminServer(t, &fakeFleetServer{off: true})
	var out, errOut bytes.Buffer
	if code := run([]string{"sessions", "--http", addr, "--token-file", token, "--fleet"}, &out, &errOut); code != 1 ||
		!strings.Contains(errOut.String(), "fleet.redis") {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
}

// TestDisconnectFleetCommand: --user ends the local ones, asks the fleet
// and says so; the fleet not taking it fails the command; --id stays
// local; a single node answers as before.
func TestDisconnectFleetCommand(t *testing.T) {
	f := &fakeFleetServer{}
	addr, token := fleetAdminServer(t, f)
	single, singleToken := fleetAdminServer(t, &fakeFleetServer{off: true})
	tests := []struct {
		addr, token string
		args        []string
		redisDown   bool
		code        int
		out, err    string
	}{
		{addr, token, []string{"--user", "alice"}, false, 0,
			"disconnected 1 allocation on this node; every node of the fleet was asked to end alice's\n", ""},
		{addr, token, []string{"--user", "alice"}, true, 1, "disconnected 1 allocation on this node\n",
			"the other nodes were not asked, they keep alice's allocations: fleet disconnect \"alice\": fleet unavailable"},
		{addr, token, []string{"--id", "127.0.0.1:50000"}, false, 0, "disconnected 1 allocation\n", ""},
		{single, singleToken, []string{"--user", "alice"}, false, 0, "disconnected 1 allocation\n", ""},
	}
	for _, tc := range tests {
		f.mu.Lock()
		f.err = nil
		if tc.redisDown {
			f.err = errors.New("fleet disconnect \"alice\": fleet unavailable")
		}
		f.mu.Unlock()
		var out, errOut bytes.Buffer
		code := run(append([]string{"disconnect", "--http", tc.addr, "--token-file", tc.token}, tc.args...), &out, &errOut)
		if code != tc.code || !strings.HasSuffix(out.String(), tc.out) || !strings.Contains(errOut.String(), tc.err) {
			t.Errorf("disconnect %v (Redis down %v): exit %d, out %q, err %q; want %d, %q, %q", tc.args, tc.redisDown,
				code, out.String(), errOut.String(), tc.code, tc.out, tc.err)
		}
	}
	if fmt.Sprint(f.asked) != "[local alice fleet alice local alice fleet alice local 127.0.0.1:50000]" {
		t.Fatalf("asked %q", f.asked)
	}
}

// TestFleetAPICredentials: the server's errors map to the endpoint's
// answers; a server in no fleet serves no fleet endpoints at all.
func TestFleetAPICredentials(t *testing.T) {
	f := &fakeFleetServer{}
	addr, _ := fleetAdminServer(t, f)
	get := func(auth string) (int, string) {
		t.Helper()
		req, err := http.NewRequest("GET", "http://"+addr+"/credentials?user=alice", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", auth)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var b bytes.Buffer
		_, _ = b.ReadFrom(resp.Body)
		return resp.StatusCode, b.String()
	}
	if code, body := get("Bearer ctok"); code != http.StatusOK || !strings.Contains(body, `"username": "1700003600:alice"`) ||
		!strings.Contains(body, `"ttl": 3600`) {
		t.Fatalf("credentials: %d %s", code, body)
	}
	if code, _ := get("Bearer tok"); code != http.StatusUnauthorized {
		t.Errorf("with the admin token: %d, want 401", code)
	}
	for err, want := range map[error]int{
		fmt.Errorf("credentials: %w", server.ErrNoNodes):                  http.StatusServiceUnavailable,
		fmt.Errorf("credentials: no auth.secrets: %w", server.ErrNoFleet): http.StatusServiceUnavailable,
		fmt.Errorf("credentials: find nodes: %w", fleet.ErrUnavailable):   http.StatusServiceUnavailable,
		fmt.Errorf("credentials for %q: %w", "alice", server.ErrBadUser):  http.StatusBadRequest,
	} {
		f.credsErr = err
		if code, body := get("Bearer ctok"); code != want || strings.Contains(body, err.Error()) {
			t.Errorf("%v: %d %q, want %d without the error's text", err, code, body, want)
		}
	}

	if got := fleetAPI(&fakeFleetServer{off: true}, "/some/file"); got.Sessions != nil || got.Disconnect != nil ||
		got.Credentials != nil || got.Status != nil || got.CredentialsTokenFile != "" {
		t.Errorf("fleetAPI of a server in no fleet: %+v, want the zero value", got)
	}
}

// TestFleetAPIStatusAndMetrics: /status and the metrics source carry the
// server's fleet stats field by field.
func TestFleetAPIStatusAndMetrics(t *testing.T) {
	st := fleetAPI(&fakeFleetServer{}, "").Status()
	if st == nil || *st != (httpapi.FleetStatus{Node: "n1", Up: true, Outages: 1, Held: 2, UsageQueued: 3, UsageDropped: 4,
		OnOutage: "local"}) {
		t.Errorf("status %+v", st)
	}
	m, on := fleetMetrics(&fakeFleetServer{})
	if !on || m != (metrics.FleetStats{Up: true, Outages: 1, Held: 2, UsageQueued: 3, UsageDropped: 4, Admitted: 5,
		Refused: 6, Fallback: 7}) {
		t.Errorf("metrics %+v %v", m, on)
	}
	if _, on := fleetMetrics(&fakeFleetServer{off: true}); on {
		t.Error("metrics of a server in no fleet say it is on")
	}
}
