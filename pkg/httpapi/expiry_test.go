package httpapi_test

import (
	"encoding/json"
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
	now := time.Now()
	// Three allocations, made 1, 2 and 3 minutes ago, ending in 30 s, 5 m
	// and 90 s (what Table.Expiry sums up: TestTableExpiry).
	counts := func() map[allocation.Transport]int { return map[allocation.Transport]int{allocation.UDP: 3} }
	expiry := func() allocation.Expiry {
		return allocation.Expiry{Oldest: now.Add(-3 * time.Minute), Next: now.Add(30 * time.Second), Last: now.Add(5 * time.Minute)}
	}
	st := drain.Status{Phase: drain.Draining, Trigger: drain.Terminate, Started: now, Deadline: now.Add(time.Hour)}
	api := httpapi.New(httpapi.Options{
		Started: now, Allocations: counts, Expiry: expiry,
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
