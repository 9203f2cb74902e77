// Package httpapi serves turnd's HTTP endpoints: /healthz (the process is
// alive), /readyz (new allocations are welcome; 503 from the instant a drain
// starts), /status (JSON for people and scripts) and /metrics (Prometheus).
//
// It only reads state through the callbacks it is given; it never changes
// anything in the TURN service.
package httpapi
