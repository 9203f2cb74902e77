// Package allocation keeps turnd's own book of live TURN allocations: who
// holds them, over which client transport, and whether a new one fits the
// configured quotas.
//
// pion/turn owns the allocations themselves (one table per listening socket);
// this registry mirrors them from pion's lifecycle events so the rest of
// turnd can ask cheap questions ("how many are left?", "may alice have
// another?") and be woken when the count changes — which is what the drain
// waits on. It knows nothing about HTTP, Prometheus or signals.
package allocation
