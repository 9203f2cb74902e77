// Package edge moves turnd's client bytes: it binds the client-facing
// sockets (Bind: a SO_REUSEPORT group per UDP address behind an address
// lock, TCP and TLS listeners with connection caps, shared TCP/TLS ports
// told apart by the first byte, PROXY protocol headers) and serves them for
// one of two control planes.
//
// pion's plane (today's): it wraps UDP socket groups (PacketConn:
// recvmmsg batches, the relay's fast path first, then pion) and TCP/TLS
// listeners (Listener: TLS handshakes, framing a stream into STUN messages
// and ChannelData, RFC 6062 data connections, the hand-off of a plain TCP
// connection to a Reactor, the relay's loop, once it holds an allocation).
// It decides nothing: every message goes to the gate's policy
// (gate.Inspect, gate.Outgoing), and it does as told. It also keeps what
// only the I/O knows: the live TCP/TLS connections by 5-tuple (Stream,
// Allocated, Released, StreamTLS), the messages pion is handling (Quiesce)
// and, per UDP socket, the relay port the gate chose for the request being
// handled (PortHint).
//
// turnd's own plane (being built beside it, not wired yet): ServeUDP reads
// a group socket and ServeStreams a listener's connections, one reader per
// socket or connection for its life (a relay loop from accept for plain
// TCP, its own goroutine for TLS), framing each stream once; data frames go
// to a FastPath, STUN messages to a Handler with a bindings.Client whose
// Lane or Stream answers, inline. A Stream never stalls its writer (an
// outbox per connection), becomes an RFC 6062 pipe on Pipe, and keeps its
// idle timeout while it holds no allocation. Stop ends the readers and lets
// the last answers out; Failed reports a reader or accept loop that died.
// No per-connection state is keyed by 5-tuple: the Client travels with the
// request.
//
// It imports gate (pion's plane), never the reverse; it must never import
// relay, server, pkg/turn or pion/turn (the relay reaches it through
// FastPath and Reactor, the handlers through Handler, which server wires),
// nor pkg/config (server translates the configuration into Listen), nor
// Prometheus or HTTP.
package edge
