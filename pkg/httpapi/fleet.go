package httpapi

import (
	"context"
	"time"
)

// Fleet is what the fleet endpoints read and do: GET /sessions?scope=fleet,
// the fleet part of POST /sessions/disconnect?user=, GET /credentials and
// the "fleet" object of /status. The zero value is a single node: no fleet
// scope, disconnect stays local, no /credentials, no "fleet" in /status.
type Fleet struct {
	// Sessions lists every live node's allocations, this node's included.
	Sessions func(ctx context.Context) ([]FleetSession, error)
	// Disconnect asks every node to end user's allocations; this node's
	// own are ended by Admin.Disconnect first.
	Disconnect func(ctx context.Context, user, by string) error
	// Credentials hands out REST credentials for user; its errors wrap
	// ErrUnavailable when the fleet cannot answer now.
	Credentials func(ctx context.Context, user string) (Credentials, error)
	// CredentialsTokenFile holds the bearer token GET /credentials
	// requires; "" leaves the endpoint off.
	CredentialsTokenFile string
	// Status is the fleet's state for /status; nil, or a nil answer,
	// leaves "fleet" out.
	Status func() *FleetStatus
}

// FleetSession is one live allocation of some node of the fleet, as that
// node published it.
type FleetSession struct {
	Node, ID, User, Client, Transport, Relay string
	StartedAt                                time.Time
}

// Credentials is the GET /credentials answer, the TURN REST API draft's
// fields. Field names are a public interface: add, never rename.
type Credentials struct {
	Username string   `json:"username"` // "<expiry unix seconds>:<user>"
	Password string   `json:"password"` // base64 HMAC-SHA1(secret, username)
	TTL      int64    `json:"ttl"`      // seconds
	URIs     []string `json:"uris"`
}

// FleetStatus is the "fleet" object of /status. Field names are a public
// interface: add, never rename.
type FleetStatus struct {
	Node string `json:"node"`
	// Up is false while Redis cannot be reached: new allocations follow
	// OnOutage.
	Up bool `json:"up"`
	// Error is why the fleet is down; "" while up.
	Error string `json:"error"`
	// Outages counts the times the fleet went down since start.
	Outages uint64 `json:"outages"`
	// Held is this node's allocations counted in the fleet's quotas.
	Held int `json:"held"`
	// UsageQueued and UsageDropped are usage records waiting for Redis,
	// and those lost because the queue was full.
	UsageQueued  int    `json:"usage_queued"`
	UsageDropped uint64 `json:"usage_dropped"`
	// OnOutage is fleet.on_outage: local or refuse.
	OnOutage string `json:"on_outage"`
}
