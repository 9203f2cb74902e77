package httpapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/turnd/turnd/internal/traffic"
	"github.com/turnd/turnd/pkg/allocation"
	"github.com/turnd/turnd/pkg/httpapi"
)

const credToken = "s3cret-credentials-token"

// fleetFixture is a node "n1" of a fleet with nodes n1, n2 and n3: n1 holds
// two live allocations of alice, the fleet lists those and three more.
type fleetFixture struct {
	api       *httpapi.API
	calls     []string // Admin.Disconnect and Fleet.Disconnect, in order
	fleetErr  error    // what Fleet.Disconnect and Fleet.Sessions fail with
	credsErr  error
	credsUser string
}

func newFleetFixture(t *testing.T, credsFile string) *fleetFixture {
	t.Helper()
	f := &fleetFixture{}
	dir := t.TempDir()
	adminFile := filepath.Join(dir, "admin")
	if err := os.WriteFile(adminFile, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now().Add(-time.Hour)
	relay := func(port int) *net.UDPAddr { return &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: port} }
	local := []allocation.Info{
		{User: "alice", Transport: allocation.UDP, Created: t0.Add(2 * time.Minute), Relay: relay(50001),
			Client: &net.UDPAddr{IP: net.IPv4(192, 0, 2, 1), Port: 1}},
		{User: "alice", Transport: allocation.UDP, Created: t0.Add(4 * time.Minute), Relay: relay(50002),
			Client: &net.UDPAddr{IP: net.IPv4(192, 0, 2, 1), Port: 2}},
	}
	fleet := []httpapi.FleetSession{ // as the fleet lists them: by node
		{Node: "n1", ID: "127.0.0.1:50001", User: "alice", Transport: "udp", Relay: "127.0.0.1:50001", StartedAt: t0.Add(2 * time.Minute)},
		{Node: "n1", ID: "127.0.0.1:50002", User: "alice", Transport: "udp", Relay: "127.0.0.1:50002", StartedAt: t0.Add(4 * time.Minute)},
		{Node: "n2", ID: "10.0.0.2:50001", User: "bob", Client: "192.0.2.9:9", Transport: "tcp", Relay: "10.0.0.2:50001", StartedAt: t0},
		{Node: "n2", ID: "10.0.0.2:50002", User: "alice", Transport: "udp", Relay: "10.0.0.2:50002", StartedAt: t0.Add(3 * time.Minute)},
		// The same relay address as one of n1's, on another host.
		{Node: "n3", ID: "127.0.0.1:50001", User: "alice", Transport: "tls", Relay: "127.0.0.1:50001", StartedAt: t0.Add(time.Minute)},
	}
	f.api = httpapi.New(httpapi.Options{
		Admin: httpapi.Admin{
			TokenFile: adminFile,
			Sessions: func(user string) []allocation.Info {
				if user != "" && user != "alice" {
					return nil
				}
				return local
			},
			Usage: func(info allocation.Info) traffic.Usage {
				return traffic.Usage{ToPeerBytes: uint64(info.Relay.(*net.UDPAddr).Port), Channels: 1}
			},
			Disconnect: func(user, id, by string) int {
				f.calls = append(f.calls, "local "+user+id)
				return 2
			},
		},
		Fleet: httpapi.Fleet{
			Sessions: func(context.Context) ([]httpapi.FleetSession, error) {
				if f.fleetErr != nil {
					return nil, f.fleetErr
				}
				return fleet, nil
			},
			Disconnect: func(_ context.Context, user, by string) error {
				f.calls = append(f.calls, "fleet "+user+" "+by)
				return f.fleetErr
			},
			Credentials: func(_ context.Context, user string) (httpapi.Credentials, error) {
				f.credsUser = user
				if f.credsErr != nil {
					return httpapi.Credentials{}, f.credsErr
				}
				return httpapi.Credentials{Username: "1700003600:" + user, Password: "cGFzcw==", TTL: 3600,
					URIs: []string{"turn:10.0.0.2:3478?transport=udp", "turn:10.0.0.3:3478?transport=udp"}}, nil
			},
			CredentialsTokenFile: credsFile,
			Status: func() *httpapi.FleetStatus {
				return &httpapi.FleetStatus{Node: "n1", Up: true, Outages: 2, Held: 2, UsageQueued: 1, UsageDropped: 3,
					OnOutage: "local"}
			},
		},
	})
	return f
}

func credentialsFile(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "credentials-token")
	if err := os.WriteFile(path, []byte(credToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestFleetSessionsPagesOldestFirst: scope=fleet pages through every
// node's allocations oldest first, each with its node; this node's carry
// their traffic, the others' none; ?user= filters.
func TestFleetSessionsPagesOldestFirst(t *testing.T) {
	f := newFleetFixture(t, "")
	want := "[n2/10.0.0.2:50001/0/0 n3/127.0.0.1:50001/0/0 n1/127.0.0.1:50001/50001/1 n2/10.0.0.2:50002/0/0 n1/127.0.0.1:50002/50002/1]"
	for _, limit := range []string{"2", "5"} {
		var got []string
		next := "/sessions?scope=fleet&limit=" + limit
		for pages := 0; next != ""; pages++ {
			if pages > 5 {
				t.Fatal("paging does not end")
			}
			rec := adminDo(t, f.api, "GET", next, "Bearer "+token)
			var page httpapi.SessionPage
			if rec.Code != http.StatusOK || json.Unmarshal(rec.Body.Bytes(), &page) != nil || page.Total != 5 {
				t.Fatalf("GET %s: %d %s", next, rec.Code, rec.Body.String())
			}
			for _, s := range page.Sessions {
				got = append(got, fmt.Sprintf("%s/%s/%d/%d", s.Node, s.ID, s.ToPeerBytes, s.Channels))
				if s.DurationSeconds < 3000 {
					t.Errorf("session %+v: duration_seconds %v, want about an hour", s, s.DurationSeconds)
				}
			}
			next = ""
			if page.NextOffset != nil {
				next = "/sessions?scope=fleet&limit=" + limit + "&offset=" + strconv.Itoa(*page.NextOffset)
			}
		}
		if fmt.Sprint(got) != want {
			t.Fatalf("limit %s: paged through\n%v\nwant\n%s", limit, got, want)
		}
	}

	rec := adminDo(t, f.api, "GET", "/sessions?scope=fleet&user=bob", "Bearer "+token)
	var page httpapi.SessionPage
	if err := json.Unmarshal(rec.Body.Bytes(), &page); err != nil || page.Total != 1 || page.Sessions[0].Node != "n2" ||
		page.Sessions[0].Client != "192.0.2.9:9" || page.Sessions[0].Transport != "tcp" {
		t.Fatalf("bob's fleet sessions: %s (%v)", rec.Body.String(), err)
	}
	// The local scope stays as it was: no node in it.
	rec = adminDo(t, f.api, "GET", "/sessions", "Bearer "+token)
	if rec.Code != http.StatusOK || strings.Contains(rec.Body.String(), `"node"`) {
		t.Fatalf("local /sessions: %d %s", rec.Code, rec.Body.String())
	}
}

// TestFleetSessionsErrors: scope=fleet needs the admin token and a fleet;
// Redis down is 503; an unknown scope is 400.
func TestFleetSessionsErrors(t *testing.T) {
	f := newFleetFixture(t, "")
	if rec := adminDo(t, f.api, "GET", "/sessions?scope=fleet", "Bearer wrong"); rec.Code != http.StatusUnauthorized {
		t.Errorf("scope=fleet with a wrong token: %d, want 401", rec.Code)
	}
	if rec := adminDo(t, f.api, "GET", "/sessions?scope=nodes", "Bearer "+token); rec.Code != http.StatusBadRequest {
		t.Errorf("scope=nodes: %d, want 400", rec.Code)
	}
	f.fleetErr = errors.New("redis: connection refused")
	rec := adminDo(t, f.api, "GET", "/sessions?scope=fleet", "Bearer "+token)
	if rec.Code != http.StatusServiceUnavailable || !strings.Contains(rec.Body.String(), "connection refused") {
		t.Errorf("scope=fleet with Redis down: %d %q, want 503 saying why", rec.Code, rec.Body.String())
	}

	var asked []string
	single, _ := adminAPI(t, 1, &asked)
	rec = adminDo(t, single, "GET", "/sessions?scope=fleet", "Bearer "+token)
	if rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), "fleet.redis") {
		t.Errorf("scope=fleet on a single node: %d %q, want 400 naming fleet.redis", rec.Code, rec.Body.String())
	}
}

// TestFleetDisconnect: by user, this node ends its own first, then asks
// the fleet with the same operator; Redis refusing is said in the answer,
// which stays 200; by ID it stays local.
func TestFleetDisconnect(t *testing.T) {
	f := newFleetFixture(t, "")
	decode := func(rec interface{ Result() *http.Response }) map[string]any {
		t.Helper()
		var m map[string]any
		if err := json.NewDecoder(rec.Result().Body).Decode(&m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	rec := adminDo(t, f.api, "POST", "/sessions/disconnect?user=alice", "Bearer "+token)
	if rec.Code != http.StatusOK {
		t.Fatalf("disconnect: %d %s", rec.Code, rec.Body.String())
	}
	if m := decode(rec); m["disconnected"] != 2.0 || m["fleet"] != true || m["fleet_error"] != nil {
		t.Errorf("answer %v, want disconnected 2, fleet true, no fleet_error", m)
	}
	if len(f.calls) != 2 || f.calls[0] != "local alice" || !strings.HasPrefix(f.calls[1], "fleet alice http ") ||
		!strings.HasSuffix(f.calls[1], "operator ops-alice") {
		t.Fatalf("calls %q, want the local disconnect, then the fleet's with who asked", f.calls)
	}

	f.calls, f.fleetErr = nil, errors.New("disconnect \"alice\": fleet unavailable")
	rec = adminDo(t, f.api, "POST", "/sessions/disconnect?user=alice", "Bearer "+token)
	if m := decode(rec); rec.Code != http.StatusOK || m["disconnected"] != 2.0 || m["fleet"] != true ||
		m["fleet_error"] != "disconnect \"alice\": fleet unavailable" {
		t.Errorf("with Redis down: %d %v, want 200 with fleet_error", rec.Code, m)
	}

	f.calls = nil
	rec = adminDo(t, f.api, "POST", "/sessions/disconnect?id=127.0.0.1:50001", "Bearer "+token)
	if m := decode(rec); m["fleet"] != nil || m["fleet_error"] != nil || fmt.Sprint(f.calls) != "[local 127.0.0.1:50001]" {
		t.Errorf("by id: answer %v, calls %q; want local only", m, f.calls)
	}

	var asked []string
	single, _ := adminAPI(t, 1, &asked)
	if body := adminDo(t, single, "POST", "/sessions/disconnect?user=alice", "Bearer "+token).Body.String(); strings.Contains(body, "fleet") {
		t.Errorf("single node's answer %s mentions the fleet", body)
	}
}

// TestFleetStatus: /status carries the fleet object with its public field
// names; a single node has none.
func TestFleetStatus(t *testing.T) {
	f := newFleetFixture(t, "")
	_, raw := getStatus(t, f.api)
	var fl map[string]any
	if err := json.Unmarshal(raw["fleet"], &fl); err != nil {
		t.Fatalf("fleet %s: %v", raw["fleet"], err)
	}
	want := map[string]any{"node": "n1", "up": true, "error": "", "outages": 2.0, "held": 2.0, "usage_queued": 1.0,
		"usage_dropped": 3.0, "on_outage": "local"}
	if fmt.Sprint(fl) != fmt.Sprint(want) {
		t.Errorf("fleet %v, want %v", fl, want)
	}
	for name, opts := range map[string]httpapi.Options{
		"no fleet":         {},
		"status says none": {Fleet: httpapi.Fleet{Status: func() *httpapi.FleetStatus { return nil }}},
	} {
		if _, raw := getStatus(t, httpapi.New(opts)); raw["fleet"] != nil {
			t.Errorf("%s: fleet %s, want absent", name, raw["fleet"])
		}
	}
}
