// Package turn is turnd's TURN control protocol: every STUN message a
// client sends that is not data for the fast path comes to (*Handler).Serve,
// which looks at it, decodes it once, authenticates it once (RFC 8489 §9.2,
// long-term credentials, REST secrets with rotation, stateless nonces) and
// dispatches it on (class, method) to one handler per method, each quoting
// the RFC steps it implements. Every answer is built and signed once, with
// its reason phrase.
//
// It decides and answers; it holds no socket. Clients are reached through
// bindings.Client, relay sockets through the Relays interface, allocations
// live in the table of package allocation, and what is worth a metric or a
// log line goes to Events. It must never import edge, relay, mmsg, syscall,
// x/sys, crypto/tls, Prometheus or HTTP (TestImportsHoldNoSockets).
package turn
