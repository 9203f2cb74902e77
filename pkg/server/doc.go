// Package server assembles turnd's TURN service: it translates its
// configuration into the client-facing sockets the edge binds (edge.Bind: a
// SO_REUSEPORT group per UDP address, TCP and TLS listeners), puts the edge
// (client I/O, asking the gate's policy) in front of them, and runs
// pion/turn behind it with turnd's credentials, peer filter, quotas, relay
// sockets and allocation registry. It is the only package that imports
// pion/turn.
//
// It exposes plain methods (Registry, Reload, Close) and reports what it sees
// to an Observer; it never decides when to stop — the drain does — and it
// knows nothing about HTTP. Its one rule for the drain: no client-facing
// socket is closed or added while allocations live, because for UDP that
// socket is the client's path and re-hashing a SO_REUSEPORT group moves
// other clients' flows to sockets that do not know them.
package server
