package httpapi

import (
	"encoding/json"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/turnd/turnd/internal/traffic"
	"github.com/turnd/turnd/pkg/allocation"
)

// Admin is what the admin endpoints (/sessions, /sessions/disconnect) read
// and do. An empty TokenFile leaves them off.
type Admin struct {
	// TokenFile holds the bearer token the endpoints require.
	TokenFile string
	// Sessions lists live allocations of a user (all if ""), oldest first.
	Sessions func(user string) []allocation.Info
	// Usage returns an allocation's traffic so far.
	Usage func(allocation.Info) traffic.Usage
	// Disconnect ends a user's allocations, or the one with relay address
	// id, logs who asked (by), and returns how many it ended.
	Disconnect func(user, id, by string) int
	// Problem, if set, is told when a token file (this one, or
	// Fleet.CredentialsTokenFile) cannot be used.
	Problem func(error)
}

// Page sizes of /sessions: the default, and the most one request returns.
const (
	defaultPage = 100
	maxPage     = 1000
)

// OperatorHeader names who runs `turnd disconnect`, for the log line.
const OperatorHeader = "X-Turnd-Operator"

// Session is one live allocation in /sessions. Field names are a public
// interface (turnd sessions, scripts): add, never rename.
type Session struct {
	// Node is the fleet node holding the allocation; only with scope=fleet.
	Node            string    `json:"node,omitempty"`
	ID              string    `json:"id"` // the relay address: what disconnect --id takes
	User            string    `json:"user"`
	Client          string    `json:"client"`
	Transport       string    `json:"transport"`
	Relay           string    `json:"relay"`
	StartedAt       time.Time `json:"started_at"`
	DurationSeconds float64   `json:"duration_seconds"`
	ToPeerBytes     uint64    `json:"to_peer_bytes"`
	ToPeerPackets   uint64    `json:"to_peer_packets"`
	FromPeerBytes   uint64    `json:"from_peer_bytes"`
	FromPeerPackets uint64    `json:"from_peer_packets"`
	Permissions     uint64    `json:"permissions"`
	Channels        uint64    `json:"channels"`
}

// SessionPage is the /sessions document: one page of the live allocations.
type SessionPage struct {
	Total      int       `json:"total"` // live allocations matching the filter
	Offset     int       `json:"offset"`
	Sessions   []Session `json:"sessions"`
	NextOffset *int      `json:"next_offset,omitempty"` // absent on the last page
}

// Disconnected is the /sessions/disconnect answer.
type Disconnected struct {
	// Disconnected counts the allocations ended on this node.
	Disconnected int `json:"disconnected"`
	// Fleet is true when every node of the fleet was asked too (by user,
	// with a fleet); FleetError then says why Redis did not take it.
	Fleet      bool   `json:"fleet,omitempty"`
	FleetError string `json:"fleet_error,omitempty"`
}

func (a *API) sessions(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	offset, err1 := intParam(q.Get("offset"), 0)
	limit, err2 := intParam(q.Get("limit"), defaultPage)
	if err1 != nil || err2 != nil || offset < 0 || limit < 1 {
		http.Error(w, "offset must be >= 0 and limit >= 1", http.StatusBadRequest)
		return
	}
	limit = min(limit, maxPage)
	var page SessionPage
	switch q.Get("scope") {
	case "", "local":
		page = a.localPage(q.Get("user"), offset, limit)
	case "fleet":
		if a.opts.Fleet.Sessions == nil {
			http.Error(w, "scope=fleet: this node is in no fleet (fleet.redis is not set)", http.StatusBadRequest)
			return
		}
		var err error
		if page, err = a.fleetPage(r.Context(), q.Get("user"), offset, limit); err != nil {
			http.Error(w, "fleet sessions unavailable: "+err.Error(), http.StatusServiceUnavailable)
			return
		}
	default:
		http.Error(w, "scope must be local or fleet", http.StatusBadRequest)
		return
	}
	writeJSON(w, page)
}

// localPage is one page of this node's allocations of user (all if "").
func (a *API) localPage(user string, offset, limit int) SessionPage {
	all := a.opts.Admin.Sessions(user)
	lo, hi, next := pageBounds(len(all), offset, limit)
	page := SessionPage{Total: len(all), Offset: offset, Sessions: []Session{}, NextOffset: next}
	now := time.Now()
	for _, info := range all[lo:hi] {
		page.Sessions = append(page.Sessions, sessionOf(info, a.opts.Admin.Usage(info), now))
	}
	return page
}

// pageBounds returns the slice [lo:hi] of n items that the page at offset
// with limit items holds, and the next page's offset (nil on the last).
func pageBounds(n, offset, limit int) (lo, hi int, next *int) {
	// Compared as what is left past offset: offset+limit overflows for an
	// offset near the largest int.
	if offset >= n {
		return n, n, nil
	}
	left := n - offset
	if left > limit {
		nx := offset + limit
		next = &nx
	}
	return offset, offset + min(left, limit), next
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

func (a *API) disconnect(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	user, id := q.Get("user"), q.Get("id")
	if (user == "") == (id == "") {
		http.Error(w, "give exactly one of user and id", http.StatusBadRequest)
		return
	}
	by := "http " + r.RemoteAddr
	if op := r.Header.Get(OperatorHeader); op != "" {
		by += " operator " + op[:min(len(op), 64)]
	}
	ans := Disconnected{Disconnected: a.opts.Admin.Disconnect(user, id, by)}
	// An ID names one node's relay address, so only a user goes fleet-wide.
	if user != "" && a.opts.Fleet.Disconnect != nil {
		ans.Fleet = true
		// This node's part is done: the answer stays 200 and says the rest.
		if err := a.opts.Fleet.Disconnect(r.Context(), user, by); err != nil {
			ans.FleetError = err.Error()
		}
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(ans)
}

func sessionOf(info allocation.Info, u traffic.Usage, now time.Time) Session {
	return Session{
		ID: addrText(info.Relay), User: info.User, Client: addrText(info.Client), Transport: info.Transport.String(),
		Relay: addrText(info.Relay), StartedAt: info.Created.UTC(), DurationSeconds: now.Sub(info.Created).Seconds(),
		ToPeerBytes: u.ToPeerBytes, ToPeerPackets: u.ToPeerPackets,
		FromPeerBytes: u.FromPeerBytes, FromPeerPackets: u.FromPeerPackets,
		Permissions: u.Permissions, Channels: u.Channels,
	}
}

func addrText(a net.Addr) string {
	if a == nil {
		return ""
	}
	return a.String()
}

func intParam(s string, def int) (int, error) {
	if s == "" {
		return def, nil
	}
	return strconv.Atoi(s)
}
