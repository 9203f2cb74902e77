// Package allocation keeps turnd's book of TURN allocations.
//
// Table is the only home of an allocation: admission and quotas in one step, relayed addresses per family
// with their lifetimes, permissions and channels (written into each
// allocation's bindings.Route for the fast path), reservations, RFC 6062
// connection records, why each allocation ended, and every deadline on
// one heap that Expire works through on an injected clock.
//
// It knows nothing about HTTP, Prometheus, sockets or signals.
package allocation
