package metrics

import (
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/turnd/turnd/internal/traffic"
	"github.com/turnd/turnd/pkg/allocation"
	"github.com/turnd/turnd/pkg/drain"
)

// Sources are the state the gauges read at scrape time.
type Sources struct {
	Allocations func() map[allocation.Transport]int
	Traffic     *traffic.Counters
	Drain       func() drain.Status
	// KernelPassed counts the datagrams the kernel path handed to user
	// space, by reason; nil, or a nil map: no kernel path.
	KernelPassed func() map[string]uint64
	// Fleet is the fleet's state; false when this node is in no fleet
	// (its families then read 0). nil leaves the fleet families out.
	Fleet func() (FleetStats, bool)
}

// Metrics holds turnd's event counters. Its methods implement server.Observer.
type Metrics struct {
	created      *prometheus.CounterVec
	rejected     *prometheus.CounterVec
	permRejected *prometheus.CounterVec
	dropped      *prometheus.CounterVec
	connRefused  *prometheus.CounterVec
	panics       prometheus.Counter
	proxyRefused *prometheus.CounterVec
	reloads      *prometheus.CounterVec
	reloadOK     prometheus.Gauge
	reloadTime   prometheus.Gauge
	forceClosed  prometheus.Counter
}

// New registers turnd's metrics on reg.
func New(reg prometheus.Registerer, src Sources) (*Metrics, error) {
	m := &Metrics{
		created: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "turnd_allocations_created_total", Help: "Allocations created, by client transport.",
		}, []string{"transport"}),
		rejected: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "turnd_allocations_rejected_total",
			Help: "Allocate requests refused, by reason (auth, quota, rate, draining, redirected, tcp_disabled, capacity, bandwidth, fleet_quota, fleet_unavailable).",
		}, []string{"reason"}),
		permRejected: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "turnd_permissions_rejected_total",
			Help: "CreatePermission and ChannelBind requests refused, by reason (peer_denied, capacity).",
		}, []string{"reason"}),
		dropped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "turnd_requests_dropped_total",
			Help: "Requests dropped unanswered, by reason (rate_limited: limits.unauthenticated_rate; bad_fingerprint).",
		}, []string{"reason"}),
		connRefused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "turnd_connections_refused_total",
			Help: "TCP and TLS client connections closed on accept, by cap reached (per_ip: limits.connections_per_ip, per_prefix: limits.connections_per_prefix, total: limits.connections) or five_tuple (a PROXY header announced a live connection's 5-tuple).",
		}, []string{"reason"}),
		panics: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "turnd_panics_recovered_total",
			Help: "Panics recovered (a packet, a request callback or a downlink loop); the server carried on.",
		}),
		proxyRefused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "turnd_proxy_protocol_refused_total",
			Help: "TCP/TLS connections closed at the PROXY protocol step, by reason (untrusted, missing, malformed, timeout).",
		}, []string{"reason"}),
		reloads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "turnd_config_reloads_total", Help: "Configuration reloads (SIGHUP, SIGUSR2), by result (success, failure).",
		}, []string{"result"}),
		reloadOK: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "turnd_config_last_reload_successful", Help: "1 if the last configuration reload succeeded (or none was tried).",
		}),
		reloadTime: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "turnd_config_last_reload_success_timestamp_seconds", Help: "When the configuration was last loaded successfully.",
		}),
		forceClosed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "turnd_drain_force_closed_allocations_total", Help: "Allocations closed because the drain deadline passed.",
		}),
	}
	m.reloadOK.Set(1)
	m.reloadTime.Set(float64(time.Now().Unix()))
	// Pre-create the label values a dashboard expects to see as 0.
	for _, t := range allocation.Transports() {
		m.created.WithLabelValues(t.String())
	}
	for _, r := range []string{"auth", "quota", "rate", "draining", "redirected", "tcp_disabled", "capacity", "bandwidth", "fleet_quota",
		"fleet_unavailable"} {
		m.rejected.WithLabelValues(r)
	}
	m.permRejected.WithLabelValues("peer_denied")
	m.permRejected.WithLabelValues("capacity")
	m.dropped.WithLabelValues("rate_limited")
	m.dropped.WithLabelValues("bad_fingerprint")
	for _, r := range []string{"per_ip", "per_prefix", "total", "five_tuple"} {
		m.connRefused.WithLabelValues(r)
	}
	for _, r := range []string{"untrusted", "missing", "malformed", "timeout"} {
		m.proxyRefused.WithLabelValues(r)
	}
	cs := []prometheus.Collector{m.created, m.rejected, m.permRejected, m.dropped, m.connRefused, m.panics, m.proxyRefused, m.reloads, m.reloadOK, m.reloadTime,
		m.forceClosed, newStateCollector(src)}
	if src.Fleet != nil {
		cs = append(cs, newFleetCollector(src.Fleet))
	}
	for i, c := range cs {
		if err := reg.Register(c); err != nil {
			// All or nothing: the caller has no handle on what was
			// registered, so it could neither use nor remove it.
			for _, done := range cs[:i] {
				reg.Unregister(done)
			}
			return nil, err
		}
	}
	return m, nil
}

// AllocationCreated counts a new allocation.
func (m *Metrics) AllocationCreated(t allocation.Transport) {
	m.created.WithLabelValues(t.String()).Inc()
}

// AllocationRejected counts a refused Allocate.
func (m *Metrics) AllocationRejected(reason string) { m.rejected.WithLabelValues(reason).Inc() }

// PermissionRejected counts a refused CreatePermission or ChannelBind.
func (m *Metrics) PermissionRejected(reason string) { m.permRejected.WithLabelValues(reason).Inc() }

// RequestDropped counts a request dropped unanswered.
func (m *Metrics) RequestDropped(reason string) { m.dropped.WithLabelValues(reason).Inc() }

// ConnectionRefused counts a client connection closed on accept.
func (m *Metrics) ConnectionRefused(reason string) { m.connRefused.WithLabelValues(reason).Inc() }

// PanicRecovered counts a recovered panic: a packet's handling, a request
// callback or a downlink loop.
func (m *Metrics) PanicRecovered() { m.panics.Inc() }

// ProxyRefused counts a connection closed at the PROXY protocol step.
func (m *Metrics) ProxyRefused(reason string) { m.proxyRefused.WithLabelValues(reason).Inc() }

// Reloaded records the outcome of a configuration reload.
func (m *Metrics) Reloaded(ok bool) {
	if ok {
		m.reloads.WithLabelValues("success").Inc()
		m.reloadOK.Set(1)
		m.reloadTime.Set(float64(time.Now().Unix()))
		return
	}
	m.reloads.WithLabelValues("failure").Inc()
	m.reloadOK.Set(0)
}

// ForceClosed counts allocations ended by the drain deadline.
func (m *Metrics) ForceClosed(n int) { m.forceClosed.Add(float64(n)) }

// coturnType is coturn's spelling of a transport in turn_total_allocations{type}.
func coturnType(t allocation.Transport) string { return strings.ToUpper(t.String()) }
