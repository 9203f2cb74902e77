package metrics_test

import (
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/turnd/turnd/pkg/metrics"
)

var fleetFamilies = []string{"turnd_fleet_up", "turnd_fleet_outages_total", "turnd_fleet_usage_dropped_total",
	"turnd_fleet_usage_queued", "turnd_fleet_allocations_held", "turnd_fleet_admissions_total"}

// fleetText is the exposition of the fleet families with these values.
func fleetText(up, outages, dropped, queued, held, admitted, refused, fallback int) string {
	return strings.NewReplacer("UP", strconv.Itoa(up), "OUT", strconv.Itoa(outages), "DROP", strconv.Itoa(dropped), "QUEUE", strconv.Itoa(queued),
		"HELD", strconv.Itoa(held), "ADM", strconv.Itoa(admitted), "REF", strconv.Itoa(refused), "FALL", strconv.Itoa(fallback)).Replace(`
# HELP turnd_fleet_up 1 while the fleet's Redis answers (admissions are fleet-wide), else 0; 0 in no fleet.
# TYPE turnd_fleet_up gauge
turnd_fleet_up UP
# HELP turnd_fleet_outages_total Times the fleet went down (Redis slow or gone): new allocations then follow fleet.on_outage.
# TYPE turnd_fleet_outages_total counter
turnd_fleet_outages_total OUT
# HELP turnd_fleet_usage_dropped_total Usage records not written to the fleet's usage stream: the queue was full.
# TYPE turnd_fleet_usage_dropped_total counter
turnd_fleet_usage_dropped_total DROP
# HELP turnd_fleet_usage_queued Usage records waiting to be written to the fleet's usage stream.
# TYPE turnd_fleet_usage_queued gauge
turnd_fleet_usage_queued QUEUE
# HELP turnd_fleet_allocations_held This node's allocations counted in the fleet-wide quotas.
# TYPE turnd_fleet_allocations_held gauge
turnd_fleet_allocations_held HELD
# HELP turnd_fleet_admissions_total Allocates asked of the fleet, by result (admitted, refused: over a fleet-wide limit or Redis down with on_outage refuse, fallback: let in on this node's limits while Redis was down).
# TYPE turnd_fleet_admissions_total counter
turnd_fleet_admissions_total{result="admitted"} ADM
turnd_fleet_admissions_total{result="fallback"} FALL
turnd_fleet_admissions_total{result="refused"} REF
`)
}

// TestFleetMetrics: the fleet families read the source at each scrape.
func TestFleetMetrics(t *testing.T) {
	var mu sync.Mutex
	st, on := metrics.FleetStats{}, true
	reg := prometheus.NewRegistry()
	if _, err := metrics.New(reg, metrics.Sources{Fleet: func() (metrics.FleetStats, bool) {
		mu.Lock()
		defer mu.Unlock()
		return st, on
	}}); err != nil {
		t.Fatal(err)
	}
	set := func(s metrics.FleetStats, ok bool) {
		mu.Lock()
		defer mu.Unlock()
		st, on = s, ok
	}
	set(metrics.FleetStats{Up: true, Outages: 1, UsageDropped: 2, UsageQueued: 3, Held: 4, Admitted: 5, Refused: 6, Fallback: 7}, true)
	compare(t, reg, fleetText(1, 1, 2, 3, 4, 5, 6, 7), fleetFamilies...)
	set(metrics.FleetStats{Outages: 2, UsageQueued: 9, Held: 4, Admitted: 5, Refused: 6, Fallback: 8}, true)
	compare(t, reg, fleetText(0, 2, 0, 9, 4, 5, 6, 8), fleetFamilies...)
	// In no fleet, whatever the stats hold: every family there at 0.
	set(metrics.FleetStats{Up: true, Held: 3}, false)
	compare(t, reg, fleetText(0, 0, 0, 0, 0, 0, 0, 0), fleetFamilies...)
	problems, err := testutil.GatherAndLint(reg, fleetFamilies...)
	if err != nil || len(problems) > 0 {
		t.Errorf("lint: %v %v", problems, err)
	}
}

// TestFleetMetricsWithoutASource: no source, no fleet families.
func TestFleetMetricsWithoutASource(t *testing.T) {
	reg := prometheus.NewRegistry()
	if _, err := metrics.New(reg, metrics.Sources{}); err != nil {
		t.Fatal(err)
	}
	if n, err := testutil.GatherAndCount(reg, fleetFamilies...); err != nil || n != 0 {
		t.Errorf("%d fleet series without a source (%v)", n, err)
	}
}
