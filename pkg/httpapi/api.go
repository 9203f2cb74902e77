package httpapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/turnd/turnd/internal/traffic"
	"github.com/turnd/turnd/pkg/allocation"
	"github.com/turnd/turnd/pkg/drain"
)

// Options are the state sources the endpoints read.
type Options struct {
	Version     string
	Started     time.Time
	Allocations func() map[allocation.Transport]int
	// Expiry summarises the live allocations' ages and expiries; nil leaves
	// them out of /status.
	Expiry   func() allocation.Expiry
	Traffic  *traffic.Counters
	Drain    func() drain.Status
	Gatherer prometheus.Gatherer
	// Warnings are the problems found at start that turnd runs with (a
	// relay port range inside the kernel's ephemeral range).
	Warnings []string
	// Admin serves /sessions and /sessions/disconnect; off without a TokenFile.
	Admin Admin
	// Offload is the kernel fast path in /status; the zero value is off.
	Offload Offload
	// Fleet serves the fleet-wide endpoints; the zero value is a single
	// node.
	Fleet Fleet
}

// API is the HTTP handler set.
type API struct {
	opts Options
	mux  *http.ServeMux
}

// New returns the handler for every endpoint.
func New(opts Options) *API {
	a := &API{opts: opts, mux: http.NewServeMux()}
	a.mux.HandleFunc("GET /healthz", a.healthz)
	a.mux.HandleFunc("GET /readyz", a.readyz)
	a.mux.HandleFunc("GET /status", a.status)
	if opts.Gatherer != nil {
		a.mux.Handle("GET /metrics", promhttp.HandlerFor(opts.Gatherer, promhttp.HandlerOpts{}))
	}
	if opts.Admin.TokenFile != "" {
		a.mux.HandleFunc("GET /sessions", a.requireToken(a.sessions))
		a.mux.HandleFunc("POST /sessions/disconnect", a.requireToken(a.disconnect))
	}
	if opts.Fleet.CredentialsTokenFile != "" && opts.Fleet.Credentials != nil {
		a.mux.HandleFunc("GET /credentials", a.guard(tokenGuard{file: opts.Fleet.CredentialsTokenFile,
			name: "credentials"}, a.credentials))
	}
	return a
}

// ServeHTTP implements http.Handler.
func (a *API) ServeHTTP(w http.ResponseWriter, r *http.Request) { a.mux.ServeHTTP(w, r) }

// healthz answers 200 while the process can answer at all, draining included:
// a liveness failure would make Kubernetes kill the drain.
func (a *API) healthz(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = fmt.Fprintln(w, "ok")
}

// readyz answers 503 from the instant a drain starts (even during the
// lame-duck delay), so load balancers stop sending new clients.
func (a *API) readyz(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	st := a.snapshot()
	if st.Drain == nil {
		_, _ = fmt.Fprintf(w, "serving: %d allocations\n", st.Allocations.Total)
		return
	}
	w.WriteHeader(http.StatusServiceUnavailable)
	_, _ = fmt.Fprintf(w, "%s: %d allocations left, deadline %s (%.0fs)\n", st.State, st.Allocations.Total,
		st.Drain.Deadline.UTC().Format(time.RFC3339), st.Drain.SecondsLeft)
}

func (a *API) status(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(a.snapshot())
}
