package httpapi_test

import (
	"encoding/json"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/turnd/turnd/pkg/allocation"
	"github.com/turnd/turnd/pkg/drain"
	"github.com/turnd/turnd/pkg/httpapi"
)

// TestStatusShowsExpiries: /status says when the oldest allocation was made
// and when the live ones end unless refreshed, and a drain says by when it
// ends at the latest: the last expiry, before the deadline.
func TestStatusShowsExpiries(t *testing.T) {
	reg := allocation.NewRegistry(allocation.Limits{})
	server := &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 3478}
	now := time.Now()
	for i, exp := range []time.Duration{30 * time.Second, 5 * time.Minute, 90 * time.Second} {
		client := &net.UDPAddr{IP: net.IPv4(127, 0, 0, 2), Port: 40000 + i}
		reg.Add(allocation.Info{Client: client, Server: server, Created: now.Add(-time.Duration(i+1) * time.Minute)})
		reg.Extend(client, server, now.Add(exp))
	}
	st := drain.Status{Phase: drain.Draining, Trigger: drain.Terminate, Started: now, Deadline: now.Add(time.Hour)}
	api := httpapi.New(httpapi.Options{
		Started: now, Allocations: reg.ByTransport, Expiry: reg.Expiry,
		Drain: func() drain.Status { return st },
	})
	resp, body := do(t, api, http.MethodGet, "/status")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/status: %d", resp.StatusCode)
	}
	var doc httpapi.Status
	if err := json.Unmarshal([]byte(body), &doc); err != nil {
		t.Fatal(err)
	}
	a := doc.Allocations
	if a.Oldest == nil || !a.Oldest.Equal(now.Add(-3*time.Minute)) {
		t.Errorf("oldest_created_at %v, want 3 minutes ago", a.Oldest)
	}
	if a.NextExpiry == nil || !a.NextExpiry.Equal(now.Add(30*time.Second)) {
		t.Errorf("next_expiry %v, want in 30s", a.NextExpiry)
	}
	if a.LastExpiry == nil || !a.LastExpiry.Equal(now.Add(5*time.Minute)) {
		t.Errorf("last_expiry %v, want in 5m", a.LastExpiry)
	}
	if doc.Drain == nil || doc.Drain.AllocationsLeft != 3 || !doc.Drain.EndsBy.Equal(now.Add(5*time.Minute)) {
		t.Errorf("drain %+v, want 3 left, ending by the last expiry", doc.Drain)
	}

	// A deadline before the last expiry bounds the drain.
	st.Deadline = now.Add(2 * time.Minute)
	_, body = do(t, api, http.MethodGet, "/status")
	if err := json.Unmarshal([]byte(body), &doc); err != nil {
		t.Fatal(err)
	}
	if !doc.Drain.EndsBy.Equal(st.Deadline) {
		t.Errorf("ends_by %v, want the deadline %v", doc.Drain.EndsBy, st.Deadline)
	}
}

// TestStatusWarnings: warnings found at start are listed in /status, and
// the list is there (empty) when there are none.
func TestStatusWarnings(t *testing.T) {
	for _, warnings := range [][]string{nil, {"relay ports 49152-65535 overlap the kernel's ephemeral port range"}} {
		_, body := do(t, httpapi.New(httpapi.Options{Warnings: warnings}), http.MethodGet, "/status")
		var doc map[string]json.RawMessage
		if err := json.Unmarshal([]byte(body), &doc); err != nil {
			t.Fatal(err)
		}
		var got []string
		if err := json.Unmarshal(doc["warnings"], &got); err != nil || got == nil || len(got) != len(warnings) {
			t.Errorf("warnings %s, want %q", doc["warnings"], warnings)
		}
	}
}
