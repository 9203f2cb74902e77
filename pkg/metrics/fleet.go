package metrics

import "github.com/prometheus/client_golang/prometheus"

// FleetStats is this node's view of its fleet, as the fleet metrics read
// it at scrape time. The counters only grow while the process runs.
type FleetStats struct {
	Up           bool   // Redis answers: admissions are fleet-wide
	Outages      uint64 // times the fleet went down
	Held         int    // this node's allocations counted in the fleet's quotas
	UsageQueued  int    // usage records waiting to be written to Redis
	UsageDropped uint64 // usage records lost to a full queue
	// Admissions by result: admitted by the fleet, refused by it (over a
	// fleet-wide limit, or Redis down with on_outage: refuse), or let in on
	// this node's limits alone while Redis was down.
	Admitted, Refused, Fallback uint64
}

// fleetCollector reports the fleet's state read from a callback. A node
// in no fleet reports every family at 0, as the kernel path's do when off.
type fleetCollector struct {
	stats                        func() (FleetStats, bool)
	up, outages, dropped, queued *prometheus.Desc
	held, admissions             *prometheus.Desc
}

func newFleetCollector(stats func() (FleetStats, bool)) *fleetCollector {
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(name, help, labels, nil)
	}
	return &fleetCollector{
		stats: stats,
		up:    d("turnd_fleet_up", "1 while the fleet's Redis answers (admissions are fleet-wide), else 0; 0 in no fleet."),
		outages: d("turnd_fleet_outages_total",
			"Times the fleet went down (Redis slow or gone): new allocations then follow fleet.on_outage."),
		dropped: d("turnd_fleet_usage_dropped_total", "Usage records not written to the fleet's usage stream: the queue was full."),
		queued:  d("turnd_fleet_usage_queued", "Usage records waiting to be written to the fleet's usage stream."),
		held:    d("turnd_fleet_allocations_held", "This node's allocations counted in the fleet-wide quotas."),
		admissions: d("turnd_fleet_admissions_total",
			"Allocates asked of the fleet, by result (admitted, refused: over a fleet-wide limit or Redis down with on_outage refuse, fallback: let in on this node's limits while Redis was down).",
			"result"),
	}
}

func (c *fleetCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.up, c.outages, c.dropped, c.queued, c.held, c.admissions} {
		ch <- d
	}
}

func (c *fleetCollector) Collect(ch chan<- prometheus.Metric) {
	st, ok := c.stats()
	if !ok {
		st = FleetStats{}
	}
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	counter := func(d *prometheus.Desc, v uint64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	gauge(c.up, b2f(st.Up))
	counter(c.outages, st.Outages)
	counter(c.dropped, st.UsageDropped)
	gauge(c.queued, float64(st.UsageQueued))
	gauge(c.held, float64(st.Held))
	counter(c.admissions, st.Admitted, "admitted")
	counter(c.admissions, st.Refused, "refused")
	counter(c.admissions, st.Fallback, "fallback")
}
