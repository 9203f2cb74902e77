// Package edge moves turnd's client bytes: it binds the client-facing
// sockets (Bind: a SO_REUSEPORT group per UDP address behind an address
// lock, TCP and TLS listeners with connection caps, shared TCP/TLS ports
// told apart by the first byte, PROXY protocol headers) and wraps them:
// UDP socket groups (PacketConn: recvmmsg batches, the relay's fast path
// first, then pion) and TCP/TLS listeners (Listener: TLS handshakes, framing
// a stream into STUN messages and ChannelData, RFC 6062 data connections,
// the hand-off of a plain TCP connection to a Reactor, the relay's loop,
// once it holds an allocation). It decides nothing: every message goes to
// the gate's policy (gate.Inspect, gate.Outgoing), and it does as told.
//
// It also keeps what only the I/O knows: the live TCP/TLS connections by
// 5-tuple (Stream, Allocated, Released, StreamTLS), the messages pion is
// handling (Quiesce) and, per UDP socket, the relay port the gate chose for
// the request being handled (PortHint).
//
// It imports gate, never the reverse; it must never import relay, server or
// pion/turn (the relay reaches it through FastPath and Reactor, which server
// wires), nor pkg/config (server translates the configuration into Listen),
// nor Prometheus or HTTP.
package edge
