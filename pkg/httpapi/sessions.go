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
	// Problem, if set, is told when the token file cannot be used.
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
	Disconnected int `json:"disconnected"`
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
	all := a.opts.Admin.Sessions(q.Get("user"))
	page := SessionPage{Total: len(all), Offset: offset, Sessions: []Session{}}
	now := time.Now()
	// Compared as what is left past offset: offset+limit overflows for an
	// offset near the largest int.
	if offset < len(all) {
		left := len(all) - offset
		for _, info := range all[offset : offset+min(left, limit)] {
			page.Sessions = append(page.Sessions, sessionOf(info, a.opts.Admin.Usage(info), now))
		}
		if left > limit {
			next := offset + limit
			page.NextOffset = &next
		}
	}
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(page)
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
	n := a.opts.Admin.Disconnect(user, id, by)
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(Disconnected{Disconnected: n})
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
