// Package metrics exposes turnd's state and events as Prometheus metrics on a
// registry the caller passes in. Gauges that mirror state (allocations,
// drain phase, relayed traffic) read it through callbacks when scraped, so
// they cannot drift; events (rejections, reloads) are counters fed by the
// server through the Observer methods.
//
// It also keeps coturn's names (turn_total_allocations{type}, the
// turn_total_traffic_peer_* counters) so existing dashboards keep working.
package metrics
