// Package edge moves turnd's client bytes: it binds the client-facing
// sockets (Bind: a SO_REUSEPORT group per UDP address behind an address
// lock, TCP and TLS listeners with connection caps, shared TCP/TLS ports
// told apart by the first byte, PROXY protocol headers) and serves them.
//
// ServeUDP reads a group socket and ServeStreams a listener's connections,
// one reader per socket or connection for its life (a relay loop from
// accept for plain TCP, its own goroutine for TLS), framing each stream
// once; data frames go to a FastPath, STUN messages to a Handler with a
// bindings.Client whose Lane or Stream answers, inline. It decides
// nothing: the handlers do. A Stream never stalls its writer (an outbox per
// connection), becomes an RFC 6062 pipe on Pipe, and keeps its idle timeout
// while it holds no allocation. Stop ends the readers and lets the last
// answers out; Failed reports a reader or accept loop that died. For a
// hand-over to a successor process, Pause parks every reader and both
// directions of every pipe reversibly (Resume undoes it), Export
// duplicates and describes what moves (the sockets, locks, listeners and
// plain TCP connections with their unread bytes; ExportPipes the plain
// TCP pipes whose peer moves too), Adopt, AdoptStreams and AdoptPipes
// rebuild them in the successor, and Release closes this process's copies
// and serves what stayed (TLS connections and pipes, connections not yet
// handed to a reader). No
// per-connection state is keyed by 5-tuple: the Client travels with the
// request.
//
// It must never import relay, server, pkg/turn or pion/turn (the relay
// reaches it through FastPath and Reactor, the handlers through Handler,
// which server wires), nor pkg/config (server translates the configuration
// into Listen), nor Prometheus or HTTP.
package edge
