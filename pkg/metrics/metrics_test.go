package metrics_test

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/turnd/turnd/internal/traffic"
	"github.com/turnd/turnd/pkg/allocation"
	"github.com/turnd/turnd/pkg/drain"
	"github.com/turnd/turnd/pkg/metrics"
)

// fakeSources are state sources a test changes between scrapes.
type fakeSources struct {
	mu      sync.Mutex
	allocs  map[allocation.Transport]int
	status  drain.Status
	calls   int // how many times the allocation source was read
	traffic traffic.Counters
}

func (f *fakeSources) Allocations() map[allocation.Transport]int {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	out := make(map[allocation.Transport]int, len(f.allocs))
	for t, n := range f.allocs {
		out[t] = n
	}
	return out
}

func (f *fakeSources) Drain() drain.Status {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.status
}

func (f *fakeSources) set(allocs map[allocation.Transport]int, st drain.Status) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.allocs, f.status = allocs, st
}

func (f *fakeSources) sources() metrics.Sources {
	return metrics.Sources{Allocations: f.Allocations, Drain: f.Drain, Traffic: &f.traffic}
}

func newMetrics(t *testing.T) (*metrics.Metrics, *prometheus.Registry, *fakeSources) {
	t.Helper()
	src := &fakeSources{status: drain.Status{Phase: drain.Serving, Accepting: true}}
	reg := prometheus.NewRegistry()
	m, err := metrics.New(reg, src.sources())
	if err != nil {
		t.Fatalf("new metrics: %v", err)
	}
	return m, reg, src
}

// compare checks the named metrics of reg against expected exposition text
// (HELP and TYPE lines included, as testutil requires).
func compare(t *testing.T, reg prometheus.Gatherer, expected string, names ...string) {
	t.Helper()
	if err := testutil.GatherAndCompare(reg, strings.NewReader(expected), names...); err != nil {
		t.Error(err)
	}
}

func TestEventCounters(t *testing.T) {
	m, reg, _ := newMetrics(t)
	// Every label value a dashboard expects is there at 0 before any event.
	compare(t, reg, `
# HELP turnd_allocations_created_total Allocations created, by client transport.
# TYPE turnd_allocations_created_total counter
turnd_allocations_created_total{transport="tcp"} 0
turnd_allocations_created_total{transport="tls"} 0
turnd_allocations_created_total{transport="udp"} 0
# HELP turnd_allocations_rejected_total Allocate requests refused, by reason (auth, quota, rate, draining, redirected, tcp_disabled, capacity, bandwidth, fleet_quota, fleet_unavailable).
# TYPE turnd_allocations_rejected_total counter
turnd_allocations_rejected_total{reason="auth"} 0
turnd_allocations_rejected_total{reason="bandwidth"} 0
turnd_allocations_rejected_total{reason="capacity"} 0
turnd_allocations_rejected_total{reason="draining"} 0
turnd_allocations_rejected_total{reason="fleet_quota"} 0
turnd_allocations_rejected_total{reason="fleet_unavailable"} 0
turnd_allocations_rejected_total{reason="quota"} 0
turnd_allocations_rejected_total{reason="rate"} 0
turnd_allocations_rejected_total{reason="redirected"} 0
turnd_allocations_rejected_total{reason="tcp_disabled"} 0
# HELP turnd_permissions_rejected_total CreatePermission and ChannelBind requests refused, by reason (peer_denied, capacity).
# TYPE turnd_permissions_rejected_total counter
turnd_permissions_rejected_total{reason="capacity"} 0
turnd_permissions_rejected_total{reason="peer_denied"} 0
`, "turnd_allocations_created_total", "turnd_allocations_rejected_total", "turnd_permissions_rejected_total")

	m.AllocationCreated(allocation.UDP)
	m.AllocationCreated(allocation.UDP)
	m.AllocationCreated(allocation.TLS)
	m.AllocationRejected("draining")
	m.AllocationRejected("draining")
	m.AllocationRejected("quota")
	m.AllocationRejected("fleet_quota")
	m.PermissionRejected("peer_denied")
	m.ForceClosed(3)
	m.ForceClosed(0)
	compare(t, reg, `
# HELP turnd_allocations_created_total Allocations created, by client transport.
# TYPE turnd_allocations_created_total counter
turnd_allocations_created_total{transport="tcp"} 0
turnd_allocations_created_total{transport="tls"} 1
turnd_allocations_created_total{transport="udp"} 2
# HELP turnd_allocations_rejected_total Allocate requests refused, by reason (auth, quota, rate, draining, redirected, tcp_disabled, capacity, bandwidth, fleet_quota, fleet_unavailable).
# TYPE turnd_allocations_rejected_total counter
turnd_allocations_rejected_total{reason="auth"} 0
turnd_allocations_rejected_total{reason="bandwidth"} 0
turnd_allocations_rejected_total{reason="capacity"} 0
turnd_allocations_rejected_total{reason="draining"} 2
turnd_allocations_rejected_total{reason="fleet_quota"} 1
turnd_allocations_rejected_total{reason="fleet_unavailable"} 0
turnd_allocations_rejected_total{reason="quota"} 1
turnd_allocations_rejected_total{reason="rate"} 0
turnd_allocations_rejected_total{reason="redirected"} 0
turnd_allocations_rejected_total{reason="tcp_disabled"} 0
# HELP turnd_permissions_rejected_total CreatePermission and ChannelBind requests refused, by reason (peer_denied, capacity).
# TYPE turnd_permissions_rejected_total counter
turnd_permissions_rejected_total{reason="capacity"} 0
turnd_permissions_rejected_total{reason="peer_denied"} 1
# HELP turnd_drain_force_closed_allocations_total Allocations closed because the drain deadline passed.
# TYPE turnd_drain_force_closed_allocations_total counter
turnd_drain_force_closed_allocations_total 3
`, "turnd_allocations_created_total", "turnd_allocations_rejected_total", "turnd_permissions_rejected_total",
		"turnd_drain_force_closed_allocations_total")
}

func TestReloads(t *testing.T) {
	before := time.Now().Unix()
	m, reg, _ := newMetrics(t)
	value := func(name string) float64 {
		t.Helper()
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			if mf.GetName() == name {
				return mf.GetMetric()[0].GetGauge().GetValue()
			}
		}
		t.Fatalf("%s not gathered", name)
		return 0
	}
	// Before any reload: the config loaded at start counts as a success.
	if v := value("turnd_config_last_reload_successful"); v != 1 {
		t.Errorf("last_reload_successful %v at start, want 1", v)
	}
	if ts := value("turnd_config_last_reload_success_timestamp_seconds"); ts < float64(before) {
		t.Errorf("last reload success timestamp %v, want at least %d", ts, before)
	}
	if n := testutil.CollectAndCount(reg, "turnd_config_reloads_total"); n != 0 {
		t.Errorf("%d reload series before any reload, want 0", n)
	}

	m.Reloaded(false)
	if v := value("turnd_config_last_reload_successful"); v != 0 {
		t.Errorf("last_reload_successful %v after a failure, want 0", v)
	}
	m.Reloaded(true)
	m.Reloaded(true)
	if v := value("turnd_config_last_reload_successful"); v != 1 {
		t.Errorf("last_reload_successful %v after a success, want 1", v)
	}
	compare(t, reg, `
# HELP turnd_config_reloads_total Configuration reloads (SIGHUP, SIGUSR2), by result (success, failure).
# TYPE turnd_config_reloads_total counter
turnd_config_reloads_total{result="failure"} 1
turnd_config_reloads_total{result="success"} 2
`, "turnd_config_reloads_total")
}

// TestStateReadAtScrape: state gauges are read from their sources when
// scraped, never cached, so a change between two scrapes shows at once.
func TestStateReadAtScrape(t *testing.T) {
	_, reg, src := newMetrics(t)
	src.set(map[allocation.Transport]int{allocation.UDP: 4, allocation.TCP: 1}, drain.Status{Phase: drain.Serving, Accepting: true})
	compare(t, reg, `
# HELP turnd_allocations Live allocations, by client transport.
# TYPE turnd_allocations gauge
turnd_allocations{transport="tcp"} 1
turnd_allocations{transport="tls"} 0
turnd_allocations{transport="udp"} 4
# HELP turn_total_allocations Live allocations, by transport (coturn-compatible).
# TYPE turn_total_allocations gauge
turn_total_allocations{type="TCP"} 1
turn_total_allocations{type="TLS"} 0
turn_total_allocations{type="UDP"} 4
# HELP turnd_draining 1 while the server drains (readiness fails), else 0.
# TYPE turnd_draining gauge
turnd_draining 0
# HELP turnd_accepting_allocations 1 while new allocations are accepted.
# TYPE turnd_accepting_allocations gauge
turnd_accepting_allocations 1
# HELP turnd_drain_deadline_timestamp_seconds When the drain force-closes what is left (0 when not draining).
# TYPE turnd_drain_deadline_timestamp_seconds gauge
turnd_drain_deadline_timestamp_seconds 0
`, "turnd_allocations", "turn_total_allocations", "turnd_draining", "turnd_accepting_allocations",
		"turnd_drain_deadline_timestamp_seconds")

	deadline := time.Unix(1_900_000_000, 0)
	src.set(map[allocation.Transport]int{allocation.TLS: 2}, drain.Status{
		Phase: drain.Draining, Accepting: false, Trigger: drain.Drain,
		Started: deadline.Add(-time.Hour), Deadline: deadline,
	})
	compare(t, reg, `
# HELP turnd_allocations Live allocations, by client transport.
# TYPE turnd_allocations gauge
turnd_allocations{transport="tcp"} 0
turnd_allocations{transport="tls"} 2
turnd_allocations{transport="udp"} 0
# HELP turn_total_allocations Live allocations, by transport (coturn-compatible).
# TYPE turn_total_allocations gauge
turn_total_allocations{type="TCP"} 0
turn_total_allocations{type="TLS"} 2
turn_total_allocations{type="UDP"} 0
# HELP turnd_draining 1 while the server drains (readiness fails), else 0.
# TYPE turnd_draining gauge
turnd_draining 1
# HELP turnd_accepting_allocations 1 while new allocations are accepted.
# TYPE turnd_accepting_allocations gauge
turnd_accepting_allocations 0
# HELP turnd_drain_deadline_timestamp_seconds When the drain force-closes what is left (0 when not draining).
# TYPE turnd_drain_deadline_timestamp_seconds gauge
turnd_drain_deadline_timestamp_seconds 1.9e+09
`, "turnd_allocations", "turn_total_allocations", "turnd_draining", "turnd_accepting_allocations",
		"turnd_drain_deadline_timestamp_seconds")

	// The lame-duck delay: draining (readiness fails) yet still accepting.
	src.set(nil, drain.Status{Phase: drain.Draining, Accepting: true, Deadline: deadline})
	compare(t, reg, `
# HELP turnd_draining 1 while the server drains (readiness fails), else 0.
# TYPE turnd_draining gauge
turnd_draining 1
# HELP turnd_accepting_allocations 1 while new allocations are accepted.
# TYPE turnd_accepting_allocations gauge
turnd_accepting_allocations 1
`, "turnd_draining", "turnd_accepting_allocations")

	src.mu.Lock()
	calls := src.calls
	src.mu.Unlock()
	if calls != 3 {
		t.Errorf("allocation source read %d times over 3 scrapes, want 3 (read at scrape time)", calls)
	}
}

func TestTraffic(t *testing.T) {
	_, reg, src := newMetrics(t)
	src.traffic.ToPeerPackets.Store(5)
	src.traffic.ToPeerBytes.Store(500)
	src.traffic.FromPeerPackets.Store(4)
	src.traffic.FromPeerBytes.Store(400)
	src.traffic.DroppedToPeer[traffic.SendError].Packets.Store(2)
	src.traffic.DroppedToPeer[traffic.SendError].Bytes.Store(20)
	src.traffic.DroppedToClient[traffic.NoPermission].Packets.Store(3)
	src.traffic.DroppedToClient[traffic.NoPermission].Bytes.Store(3000)
	compare(t, reg, `
# HELP turnd_relayed_packets_total Packets relayed, by direction (to_peer, from_peer).
# TYPE turnd_relayed_packets_total counter
turnd_relayed_packets_total{direction="from_peer"} 4
turnd_relayed_packets_total{direction="to_peer"} 5
# HELP turnd_relayed_bytes_total Payload bytes relayed, by direction (to_peer, from_peer).
# TYPE turnd_relayed_bytes_total counter
turnd_relayed_bytes_total{direction="from_peer"} 400
turnd_relayed_bytes_total{direction="to_peer"} 500
# HELP turnd_relay_dropped_total Datagrams the relay did not pass on, by direction (to_peer, to_client) and reason (no_permission, rate_limited, too_long, client_busy, send_error, forbidden_peer).
# TYPE turnd_relay_dropped_total counter
turnd_relay_dropped_total{direction="to_client",reason="client_busy"} 0
turnd_relay_dropped_total{direction="to_client",reason="no_permission"} 3
turnd_relay_dropped_total{direction="to_client",reason="rate_limited"} 0
turnd_relay_dropped_total{direction="to_client",reason="send_error"} 0
turnd_relay_dropped_total{direction="to_client",reason="too_long"} 0
turnd_relay_dropped_total{direction="to_peer",reason="forbidden_peer"} 0
turnd_relay_dropped_total{direction="to_peer",reason="rate_limited"} 0
turnd_relay_dropped_total{direction="to_peer",reason="send_error"} 2
# HELP turnd_relay_dropped_bytes_total Payload bytes of the datagrams in turnd_relay_dropped_total (but those a batched send to UDP clients lost), by direction and reason.
# TYPE turnd_relay_dropped_bytes_total counter
turnd_relay_dropped_bytes_total{direction="to_client",reason="client_busy"} 0
turnd_relay_dropped_bytes_total{direction="to_client",reason="no_permission"} 3000
turnd_relay_dropped_bytes_total{direction="to_client",reason="rate_limited"} 0
turnd_relay_dropped_bytes_total{direction="to_client",reason="send_error"} 0
turnd_relay_dropped_bytes_total{direction="to_client",reason="too_long"} 0
turnd_relay_dropped_bytes_total{direction="to_peer",reason="forbidden_peer"} 0
turnd_relay_dropped_bytes_total{direction="to_peer",reason="rate_limited"} 0
turnd_relay_dropped_bytes_total{direction="to_peer",reason="send_error"} 20
# HELP turn_total_traffic_peer_rcvp Packets received from peers (coturn-compatible).
# TYPE turn_total_traffic_peer_rcvp counter
turn_total_traffic_peer_rcvp 4
# HELP turn_total_traffic_peer_rcvb Bytes received from peers (coturn-compatible).
# TYPE turn_total_traffic_peer_rcvb counter
turn_total_traffic_peer_rcvb 400
# HELP turn_total_traffic_peer_sentp Packets sent to peers (coturn-compatible).
# TYPE turn_total_traffic_peer_sentp counter
turn_total_traffic_peer_sentp 5
# HELP turn_total_traffic_peer_sentb Bytes sent to peers (coturn-compatible).
# TYPE turn_total_traffic_peer_sentb counter
turn_total_traffic_peer_sentb 500
`, "turnd_relayed_packets_total", "turnd_relayed_bytes_total", "turnd_relay_dropped_total", "turnd_relay_dropped_bytes_total",
		"turn_total_traffic_peer_rcvp",
		"turn_total_traffic_peer_rcvb", "turn_total_traffic_peer_sentp", "turn_total_traffic_peer_sentb")

	src.traffic.ToPeerPackets.Add(1)
	if err := testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP turn_total_traffic_peer_sentp Packets sent to peers (coturn-compatible).
# TYPE turn_total_traffic_peer_sentp counter
turn_total_traffic_peer_sentp 6
`), "turn_total_traffic_peer_sentp"); err != nil {
		t.Error(err)
	}
}

// TestPeerConnectionsRefused: the relay's refused peer connections are read
// at scrape time, every reason shown (0 included), so a dashboard sees each.
func TestPeerConnectionsRefused(t *testing.T) {
	_, reg, src := newMetrics(t)
	src.traffic.PeerConnsRefused[traffic.PeerNoPermission].Store(7)
	src.traffic.PeerConnsRefused[traffic.PeerPendingLimit].Store(2)
	want := func(noPermission int) string {
		return fmt.Sprintf(`
# HELP turnd_peer_connections_refused_total Peer connections to RFC 6062 relay ports closed on accept, before the client is offered them, by reason (no_permission, forbidden_peer, pending_limit).
# TYPE turnd_peer_connections_refused_total counter
turnd_peer_connections_refused_total{reason="forbidden_peer"} 0
turnd_peer_connections_refused_total{reason="no_permission"} %d
turnd_peer_connections_refused_total{reason="pending_limit"} 2
`, noPermission)
	}
	compare(t, reg, want(7), "turnd_peer_connections_refused_total")
	src.traffic.PeerConnsRefused[traffic.PeerNoPermission].Add(1)
	compare(t, reg, want(8), "turnd_peer_connections_refused_total")
}

// TestNoSources: with no state sources only the event metrics exist, and
// gathering does not fail.
func TestNoSources(t *testing.T) {
	reg := prometheus.NewRegistry()
	if _, err := metrics.New(reg, metrics.Sources{}); err != nil {
		t.Fatalf("new metrics: %v", err)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	for _, mf := range mfs {
		if n := mf.GetName(); strings.HasPrefix(n, "turn_total_") || n == "turnd_allocations" || n == "turnd_draining" {
			t.Errorf("%s gathered without a source", n)
		}
	}
}

func TestRegisterTwice(t *testing.T) {
	m, reg, _ := newMetrics(t)
	m.AllocationCreated(allocation.UDP)
	before, err := testutil.GatherAndCount(reg)
	if err != nil {
		t.Fatal(err)
	}
	m2, err := metrics.New(reg, metrics.Sources{})
	if err == nil {
		t.Fatal("second registration on one registry succeeded")
	}
	if m2 != nil {
		t.Error("a failed New returned metrics")
	}
	var are prometheus.AlreadyRegisteredError
	if !errors.As(err, &are) {
		t.Errorf("error %v (%T), want a prometheus.AlreadyRegisteredError", err, err)
	}
	// The first registration is untouched and still counts.
	if after, err := testutil.GatherAndCount(reg); err != nil || after != before {
		t.Errorf("series after the failed registration: %d (%v), want %d", after, err, before)
	}
	m.AllocationCreated(allocation.UDP)
	compare(t, reg, `
# HELP turnd_allocations_created_total Allocations created, by client transport.
# TYPE turnd_allocations_created_total counter
turnd_allocations_created_total{transport="tcp"} 0
turnd_allocations_created_total{transport="tls"} 0
turnd_allocations_created_total{transport="udp"} 2
`, "turnd_allocations_created_total")
}

// TestRegisterConflictLeavesNothing: when one of turnd's metrics clashes
// with something already on the registry, New fails without leaving the
// metrics it registered before the clash behind.
func TestRegisterConflictLeavesNothing(t *testing.T) {
	reg := prometheus.NewRegistry()
	// Same name as the state collector's gauge, registered last by New.
	reg.MustRegister(prometheus.NewGauge(prometheus.GaugeOpts{Name: "turnd_draining", Help: "Someone else's."}))
	src := &fakeSources{}
	if _, err := metrics.New(reg, src.sources()); err == nil {
		t.Fatal("registration over a clashing metric succeeded")
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "turnd_draining" {
			t.Errorf("%s left on the registry by a failed New", mf.GetName())
		}
	}
	// Nothing of the failed attempt blocks a clean one elsewhere.
	if _, err := metrics.New(prometheus.NewRegistry(), src.sources()); err != nil {
		t.Errorf("new metrics on a fresh registry: %v", err)
	}
}

// TestLint runs Prometheus' metric linter over turnd's own names; the
// coturn-compatible ones keep coturn's spelling on purpose.
func TestLint(t *testing.T) {
	m, reg, _ := newMetrics(t)
	m.Reloaded(true)
	problems, err := testutil.GatherAndLint(reg)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		if strings.HasPrefix(p.Metric, "turnd_") {
			t.Errorf("%s: %s", p.Metric, p.Text)
		}
	}
}

// TestKernelTraffic: a scrape settles the counts kept in the kernel first,
// then shows the kernel path's share by direction and its channels.
func TestKernelTraffic(t *testing.T) {
	_, reg, src := newMetrics(t)
	src.traffic.SetSettle(func() {
		src.traffic.Kernel.ToPeerPackets.Store(7)
		src.traffic.Kernel.ToPeerBytes.Store(700)
		src.traffic.Kernel.ToClientPackets.Store(6)
		src.traffic.Kernel.ToClientBytes.Store(600)
	})
	src.traffic.KernelChannels.Store(2)
	compare(t, reg, `
# HELP turnd_kernel_relayed_packets_total Packets the kernel fast path relayed (relay.offload), by direction (to_peer, to_client); part of turnd_relayed_packets_total.
# TYPE turnd_kernel_relayed_packets_total counter
turnd_kernel_relayed_packets_total{direction="to_client"} 6
turnd_kernel_relayed_packets_total{direction="to_peer"} 7
# HELP turnd_kernel_relayed_bytes_total Payload bytes of turnd_kernel_relayed_packets_total, by direction.
# TYPE turnd_kernel_relayed_bytes_total counter
turnd_kernel_relayed_bytes_total{direction="to_client"} 600
turnd_kernel_relayed_bytes_total{direction="to_peer"} 700
# HELP turnd_kernel_offload_entries Channels the kernel fast path relays now.
# TYPE turnd_kernel_offload_entries gauge
turnd_kernel_offload_entries 2
`, "turnd_kernel_relayed_packets_total", "turnd_kernel_relayed_bytes_total", "turnd_kernel_offload_entries")
}

// TestKernelPassed: what the kernel path left to user space shows by
// reason, read at scrape time.
func TestKernelPassed(t *testing.T) {
	reg := prometheus.NewRegistry()
	if _, err := metrics.New(reg, metrics.Sources{KernelPassed: func() map[string]uint64 {
		return map[string]uint64{"no_entry": 5, "mtu": 1}
	}}); err != nil {
		t.Fatal(err)
	}
	compare(t, reg, `
# HELP turnd_kernel_passed_total Datagrams the kernel fast path left to user space (or, reason dropped_error, dropped mid-rewrite), by reason.
# TYPE turnd_kernel_passed_total counter
turnd_kernel_passed_total{reason="mtu"} 1
turnd_kernel_passed_total{reason="no_entry"} 5
`, "turnd_kernel_passed_total")
}

// TestKernelPassedWithoutAKernelPath: with the kernel path off the family
// is still there, at 0, as the kernel's relayed counters are.
func TestKernelPassedWithoutAKernelPath(t *testing.T) {
	reg := prometheus.NewRegistry()
	if _, err := metrics.New(reg, metrics.Sources{KernelPassed: func() map[string]uint64 { return nil }}); err != nil {
		t.Fatal(err)
	}
	compare(t, reg, `
# HELP turnd_kernel_passed_total Datagrams the kernel fast path left to user space (or, reason dropped_error, dropped mid-rewrite), by reason.
# TYPE turnd_kernel_passed_total counter
turnd_kernel_passed_total{reason="no_entry"} 0
`, "turnd_kernel_passed_total")
}
