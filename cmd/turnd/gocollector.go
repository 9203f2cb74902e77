package main

import (
	"regexp"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// goCollector is Prometheus' default Go collector plus go_gc_heap_live_bytes:
// the heap the last collection found live. Unlike the heap_alloc/heap_inuse
// figures it carries no garbage, so it is what shows a leak when turnd's
// allocations come and go (the soak test compares it before and after).
func goCollector() prometheus.Collector {
	return collectors.NewGoCollector(collectors.WithGoCollectorRuntimeMetrics(
		collectors.GoRuntimeMetricsRule{Matcher: regexp.MustCompile(`^/gc/heap/live:bytes$`)},
	))
}
