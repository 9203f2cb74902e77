// Package server assembles turnd's TURN service: it translates its
// configuration into the client-facing sockets the edge binds (edge.Bind: a
// SO_REUSEPORT group per UDP address, TCP and TLS listeners), and wires
// turnd's own control plane behind them: the allocation table
// (pkg/allocation), the request handlers (pkg/turn) with a policy built
// from the configuration, the relay (internal/relay) and the edge's serve
// loops (internal/edge). It is wiring and reload only.
//
// It exposes plain methods (Table, Reload, Close) and reports what it sees
// to an Observer; it never decides when to stop — the drain does — and it
// knows nothing about HTTP. Its one rule for the drain: no client-facing
// socket is closed or added while allocations live, because for UDP that
// socket is the client's path and re-hashing a SO_REUSEPORT group moves
// other clients' flows to sockets that do not know them.
package server
