// Package edge moves turnd's client bytes: it wraps the client-facing UDP
// socket groups (PacketConn: recvmmsg batches, the relay's fast path first,
// then pion) and TCP/TLS listeners (Listener: TLS handshakes, framing a
// stream into STUN messages and ChannelData, RFC 6062 data connections, the
// hand-off of a plain TCP connection to a Reactor, the relay's loop, once it
// holds an allocation). It decides nothing: every message goes to the gate's
// policy (gate.Inspect, gate.Outgoing), and it does as told.
//
// It also keeps what only the I/O knows: the live TCP/TLS connections by
// 5-tuple (Stream, Allocated, Released, StreamTLS), the messages pion is
// handling (Quiesce) and, per UDP socket, the relay port the gate chose for
// the request being handled (PortHint).
//
// It imports gate, never the reverse; it must never import relay, server or
// pion/turn (the relay reaches it through FastPath and Reactor, which server
// wires), nor Prometheus or HTTP.
package edge
