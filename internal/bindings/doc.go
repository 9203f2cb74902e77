// Package bindings names what both planes must know of one allocation: the
// route the fast path reads (where the client is, which peers hold a
// permission, which channels are bound, the traffic tally) and the request
// and answer types between the control plane and the relay.
//
// It is a leaf under pkg/allocation, pkg/turn, internal/relay and
// internal/edge, none of which may import another: it must import nothing
// of turnd but netaddr and traffic, and no sockets, pion, HTTP or
// Prometheus. A client's lane and stream are interfaces here; the relay and
// the edge supply them.
package bindings
