// Package httpapi serves turnd's HTTP endpoints: /healthz (the process is
// alive), /readyz (new allocations are welcome; 503 from the instant a drain
// starts), /status (JSON for people and scripts) and /metrics (Prometheus);
// with a token file, /sessions and /sessions/disconnect (this node's or,
// with a fleet, every node's allocations); with a fleet and its own token
// file, /credentials (TURN REST credentials and the least-loaded nodes).
//
// It reads state and acts only through the callbacks it is given: it
// changes nothing in the TURN service but what /sessions/disconnect asks.
package httpapi
