package httpapi_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/turnd/turnd/internal/traffic"
	"github.com/turnd/turnd/pkg/allocation"
	"github.com/turnd/turnd/pkg/drain"
	"github.com/turnd/turnd/pkg/httpapi"
)

// fakeState stands in for the allocation registry and the drain machine.
type fakeState struct {
	mu     sync.Mutex
	allocs map[allocation.Transport]int
	status drain.Status
}

func (f *fakeState) Allocations() map[allocation.Transport]int {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make(map[allocation.Transport]int, len(f.allocs))
	for t, n := range f.allocs {
		out[t] = n
	}
	return out
}

func (f *fakeState) Drain() drain.Status {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.status
}

func (f *fakeState) set(allocs map[allocation.Transport]int, st drain.Status) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.allocs, f.status = allocs, st
}

var serving = drain.Status{Phase: drain.Serving, Accepting: true}

// draining is a drain started a minute ago with ten minutes left.
func draining(now time.Time, accepting bool) drain.Status {
	return drain.Status{
		Phase: drain.Draining, Accepting: accepting, Trigger: drain.Terminate,
		Started: now.Add(-time.Minute), Deadline: now.Add(10 * time.Minute),
	}
}

type fixture struct {
	api     *httpapi.API
	state   *fakeState
	traffic *traffic.Counters
	started time.Time
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	reg := prometheus.NewRegistry()
	probe := prometheus.NewCounter(prometheus.CounterOpts{Name: "httpapi_test_probe_total", Help: "A test counter."})
	probe.Add(7)
	reg.MustRegister(probe)
	f := &fixture{state: &fakeState{status: serving}, traffic: &traffic.Counters{}, started: time.Now().Add(-90 * time.Second)}
	f.state.allocs = map[allocation.Transport]int{allocation.UDP: 3, allocation.TCP: 2, allocation.TLS: 1}
	f.api = httpapi.New(httpapi.Options{
		Version: "v1.2.3-test", Started: f.started,
		Allocations: f.state.Allocations, Traffic: f.traffic, Drain: f.state.Drain, Gatherer: reg,
	})
	return f
}

func do(t *testing.T, h http.Handler, method, path string) (*http.Response, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(method, path, nil))
	resp := rec.Result()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(body)
}

func TestProbes(t *testing.T) {
	now := time.Now()
	tests := []struct {
		name       string
		status     drain.Status
		readyCode  int
		readyParts []string
	}{
		{"serving", serving, http.StatusOK, []string{"serving", "6 allocations"}},
		{"lame duck: still accepting, already not ready", draining(now, true), http.StatusServiceUnavailable,
			[]string{"draining", "6 allocations left", now.Add(10 * time.Minute).UTC().Format(time.RFC3339)}},
		{"draining", draining(now, false), http.StatusServiceUnavailable,
			[]string{"draining", "6 allocations left", "deadline"}},
		{"stopped", drain.Status{Phase: drain.Stopped, Trigger: drain.Quit, Started: now, Deadline: now},
			http.StatusServiceUnavailable, []string{"stopped", "(0s)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			f.state.set(f.state.allocs, tt.status)

			resp, body := do(t, f.api, http.MethodGet, "/healthz")
			if resp.StatusCode != http.StatusOK || strings.TrimSpace(body) != "ok" {
				t.Errorf("/healthz: %d %q, want 200 ok in every phase", resp.StatusCode, body)
			}
			resp, body = do(t, f.api, http.MethodGet, "/readyz")
			if resp.StatusCode != tt.readyCode {
				t.Errorf("/readyz: %d, want %d (body %q)", resp.StatusCode, tt.readyCode, body)
			}
			for _, p := range tt.readyParts {
				if !strings.Contains(body, p) {
					t.Errorf("/readyz body %q does not contain %q", body, p)
				}
			}
			if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
				t.Errorf("/readyz Content-Type %q, want text/plain", ct)
			}
		})
	}
}

// statusDoc mirrors the /status field names that are a public interface:
// decoding into it (not into httpapi.Status) catches a renamed field.
type statusDoc struct {
	State         string  `json:"state"`
	Accepting     bool    `json:"accepting"`
	Version       string  `json:"version"`
	StartedAt     string  `json:"started_at"`
	UptimeSeconds float64 `json:"uptime_seconds"`
	Allocations   struct {
		Total       int            `json:"total"`
		ByTransport map[string]int `json:"by_transport"`
	} `json:"allocations"`
	Traffic map[string]uint64 `json:"traffic"`
	Drain   *struct {
		Trigger     string  `json:"trigger"`
		StartedAt   string  `json:"started_at"`
		Deadline    string  `json:"deadline"`
		SecondsLeft float64 `json:"seconds_left"`
	} `json:"drain"`
}

func getStatus(t *testing.T, h http.Handler) (statusDoc, map[string]json.RawMessage) {
	t.Helper()
	resp, body := do(t, h, http.MethodGet, "/status")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/status: %d %q", resp.StatusCode, body)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("/status Content-Type %q, want application/json", ct)
	}
	var doc statusDoc
	var raw map[string]json.RawMessage
	if err := json.Unmarshal([]byte(body), &doc); err != nil {
		t.Fatalf("/status is not JSON: %v\n%s", err, body)
	}
	if err := json.Unmarshal([]byte(body), &raw); err != nil {
		t.Fatal(err)
	}
	return doc, raw
}

func TestStatusServing(t *testing.T) {
	f := newFixture(t)
	f.traffic.ToPeerPackets.Store(10)
	f.traffic.ToPeerBytes.Store(1000)
	f.traffic.FromPeerPackets.Store(9)
	f.traffic.FromPeerBytes.Store(900)
	doc, raw := getStatus(t, f.api)

	if doc.State != "serving" || !doc.Accepting || doc.Version != "v1.2.3-test" {
		t.Errorf("state %q accepting %v version %q, want serving true v1.2.3-test", doc.State, doc.Accepting, doc.Version)
	}
	if doc.UptimeSeconds < 90 || doc.UptimeSeconds > 90+60 {
		t.Errorf("uptime_seconds %v, want about 90", doc.UptimeSeconds)
	}
	if started, err := time.Parse(time.RFC3339Nano, doc.StartedAt); err != nil || !started.Equal(f.started) {
		t.Errorf("started_at %q, want %v", doc.StartedAt, f.started)
	}
	want := map[string]int{"udp": 3, "tcp": 2, "tls": 1}
	if doc.Allocations.Total != 6 || len(doc.Allocations.ByTransport) != len(want) {
		t.Errorf("allocations %+v, want total 6 by %v", doc.Allocations, want)
	}
	for k, n := range want {
		if doc.Allocations.ByTransport[k] != n {
			t.Errorf("by_transport[%s] = %d, want %d", k, doc.Allocations.ByTransport[k], n)
		}
	}
	wantTraffic := map[string]uint64{"to_peer_packets": 10, "to_peer_bytes": 1000, "from_peer_packets": 9, "from_peer_bytes": 900}
	for k, n := range wantTraffic {
		if doc.Traffic[k] != n {
			t.Errorf("traffic.%s = %d, want %d", k, doc.Traffic[k], n)
		}
	}
	if _, ok := raw["drain"]; ok {
		t.Errorf("drain present while serving: %s", raw["drain"])
	}
}

func TestStatusDraining(t *testing.T) {
	f := newFixture(t)
	now := time.Now()
	st := draining(now, false)
	f.state.set(map[allocation.Transport]int{allocation.UDP: 1}, st)
	doc, _ := getStatus(t, f.api)

	if doc.State != "draining" || doc.Accepting {
		t.Errorf("state %q accepting %v, want draining false", doc.State, doc.Accepting)
	}
	if doc.Allocations.Total != 1 || doc.Allocations.ByTransport["udp"] != 1 {
		t.Errorf("allocations %+v, want one udp", doc.Allocations)
	}
	if doc.Drain == nil {
		t.Fatal("drain missing while draining")
	}
	if doc.Drain.Trigger != "terminate" {
		t.Errorf("drain.trigger %q, want terminate", doc.Drain.Trigger)
	}
	if dl, err := time.Parse(time.RFC3339Nano, doc.Drain.Deadline); err != nil || !dl.Equal(st.Deadline) {
		t.Errorf("drain.deadline %q, want %v", doc.Drain.Deadline, st.Deadline)
	}
	if s := doc.Drain.SecondsLeft; s <= 590 || s > 600 {
		t.Errorf("drain.seconds_left %v, want just under 600", s)
	}

	// A deadline already behind: nothing left, never negative.
	st.Deadline = now.Add(-time.Minute)
	f.state.set(nil, st)
	doc, _ = getStatus(t, f.api)
	if doc.Drain == nil || doc.Drain.SecondsLeft != 0 {
		t.Errorf("drain %+v, want seconds_left 0 past the deadline", doc.Drain)
	}
}

// TestStatusWithoutSources: an API given no state sources still answers a
// complete document, as a server that serves.
func TestStatusWithoutSources(t *testing.T) {
	api := httpapi.New(httpapi.Options{Version: "dev", Started: time.Now()})
	doc, raw := getStatus(t, api)
	if doc.State != "serving" || !doc.Accepting || doc.Allocations.Total != 0 {
		t.Errorf("state %q accepting %v total %d, want serving true 0", doc.State, doc.Accepting, doc.Allocations.Total)
	}
	for _, k := range []string{"udp", "tcp", "tls"} {
		if n, ok := doc.Allocations.ByTransport[k]; !ok || n != 0 {
			t.Errorf("by_transport[%s] = %d, %v; want 0, present", k, n, ok)
		}
	}
	if _, ok := raw["drain"]; ok {
		t.Error("drain present without a drain source")
	}
	if resp, _ := do(t, api, http.MethodGet, "/readyz"); resp.StatusCode != http.StatusOK {
		t.Errorf("/readyz without a drain source: %d, want 200", resp.StatusCode)
	}
	if resp, _ := do(t, api, http.MethodGet, "/metrics"); resp.StatusCode != http.StatusNotFound {
		t.Errorf("/metrics without a gatherer: %d, want 404", resp.StatusCode)
	}
}

func TestMetricsEndpoint(t *testing.T) {
	f := newFixture(t)
	resp, body := do(t, f.api, http.MethodGet, "/metrics")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/metrics: %d", resp.StatusCode)
	}
	if !strings.Contains(body, "httpapi_test_probe_total 7") {
		t.Errorf("/metrics does not serve the given gatherer:\n%s", body)
	}
}

func TestRouting(t *testing.T) {
	f := newFixture(t)
	tests := []struct {
		method, path string
		want         int
	}{
		{http.MethodGet, "/", http.StatusNotFound},
		{http.MethodGet, "/nope", http.StatusNotFound},
		{http.MethodGet, "/healthz/extra", http.StatusNotFound},
		{http.MethodHead, "/healthz", http.StatusOK},
		{http.MethodPost, "/healthz", http.StatusMethodNotAllowed},
		{http.MethodPut, "/readyz", http.StatusMethodNotAllowed},
		{http.MethodDelete, "/status", http.StatusMethodNotAllowed},
		{http.MethodPost, "/metrics", http.StatusMethodNotAllowed},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			resp, _ := do(t, f.api, tt.method, tt.path)
			if resp.StatusCode != tt.want {
				t.Errorf("%d, want %d", resp.StatusCode, tt.want)
			}
			if tt.want == http.StatusMethodNotAllowed && !strings.Contains(resp.Header.Get("Allow"), "GET") {
				t.Errorf("405 without Allow: GET (Allow %q)", resp.Header.Get("Allow"))
			}
		})
	}
}

// TestOverHTTP serves the API on a real loopback listener once, so the
// handler is known to work through net/http, not only a recorder.
func TestOverHTTP(t *testing.T) {
	f := newFixture(t)
	srv := httptest.NewServer(f.api)
	defer srv.Close()
	f.state.set(f.state.allocs, draining(time.Now(), false))
	resp, err := http.Get(srv.URL + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), "draining") {
		t.Errorf("/readyz while draining: %d %q", resp.StatusCode, body)
	}
}

// TestStatusSettlesAndShowsTheKernelPath: /status folds the kernel's
// counts in before it reads the totals, and says how the kernel path runs.
func TestStatusSettlesAndShowsTheKernelPath(t *testing.T) {
	c := &traffic.Counters{}
	c.SetSettle(func() {
		c.ToPeerPackets.Store(12)
		c.Kernel.ToPeerPackets.Store(11)
		c.Kernel.ToClientPackets.Store(4)
	})
	api := httpapi.New(httpapi.Options{Started: time.Now(), Traffic: c,
		Offload: httpapi.Offload{Mode: "tc", Interfaces: []string{"t0", "t1"}}})
	doc, raw := getStatus(t, api)
	if doc.Traffic["to_peer_packets"] != 12 || doc.Traffic["kernel_to_peer_packets"] != 11 || doc.Traffic["kernel_to_client_packets"] != 4 {
		t.Errorf("traffic %v; want to_peer_packets 12, kernel_to_peer_packets 11, kernel_to_client_packets 4", doc.Traffic)
	}
	var off httpapi.Offload
	if err := json.Unmarshal(raw["offload"], &off); err != nil || off.Mode != "tc" || len(off.Interfaces) != 2 {
		t.Errorf("offload %s (%v); want mode tc on t0, t1", raw["offload"], err)
	}
	_, raw = getStatus(t, newFixture(t).api)
	if err := json.Unmarshal(raw["offload"], &off); err != nil || off.Mode != "off" || off.Interfaces == nil || len(off.Interfaces) != 0 {
		t.Errorf("offload without the kernel path: %s; want mode off, no interfaces", raw["offload"])
	}
}
