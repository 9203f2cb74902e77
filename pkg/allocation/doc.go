// Package allocation keeps turnd's book of TURN allocations, in two forms
// while the control plane moves off pion/turn's server.
//
// Table is the only home of an allocation under turnd's own control
// plane: admission and quotas in one step, relayed addresses per family
// with their lifetimes, permissions and channels (written into each
// allocation's bindings.Route for the fast path), reservations, RFC 6062
// connection records, why each allocation ended, and every deadline on
// one heap that Expire works through on an injected clock.
//
// Registry mirrors pion's allocation tables from its lifecycle events, for
// the plane that still runs on pion; it goes when that plane does.
//
// Neither knows anything about HTTP, Prometheus, sockets or signals.
package allocation
