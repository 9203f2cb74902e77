// Package relay moves TURN data between clients and peers: its one job is
// the peer-facing side of allocations.
//
// Relay (relay.go) makes the relay sockets, bound to the configured relay
// address inside the configured port range and advertising the external
// address (ports.go, sockets.go; reserved EVEN-PORT pairs in reserve.go;
// DONT-FRAGMENT on request), and relays ChannelData and Send/Data
// indications both ways (uplink.go, conn.go); the peer → client direction
// runs in a few epoll loops over many relay sockets (downlink.go), which
// also read plain TCP clients' connections for the edge (streamread.go).
// The fast paths read each allocation's permissions, channels and tally
// from its bindings.Route, which the allocation table writes, so expiry
// applies to the fast path at once. It counts the packets and bytes
// relayed, and those it had to drop. RFC 6062 TCP relays hold their ports
// in the same table as UDP ones, dial Connects with a deadline and bound
// the pending ones (tcprelay.go).
//
// Routes (open.go, tcpopen.go) is how the handlers drive it: Open binds a
// route's relays, one per family (a dual-stack allocation has an IPv4 and
// an IPv6 socket, and the uplink sends from the one of the peer's family),
// Close ends one family or all, and RFC 6062 relays accept peers
// (Options.PeerArrived) and dial Connects themselves, holding each peer
// connection for TakePeer. A route's downlink runs in the loops whatever
// its client's transport: a TLS stream's frames, like a TCP one's, are
// written now or dropped.
//
// For an upgrade without waiting (docs/handover.md), the relay hands its
// UDP relay sockets to a successor process: Pause parks the downlink loops
// with nothing read left unwritten (pause.go); Routes.Export duplicates a
// route's sockets, Routes.Adopt serves them in the new process as Open
// would have, and Routes.Release lets the old one go of them without
// ending them (handover.go); ExportHeld, AdoptHeld and ReleaseHeld do the
// same for the ports held for reservations (handoverheld.go). An RFC 6062
// relay moves with its listeners and waiting peers (ExportTCP, AdoptTCP,
// ReleaseTCP) and each bound pair's peer connection with the edge's pipe
// (ExportPeer, AdoptPeer: handover6062.go, adopt6062.go).
//
// It must never import pion/turn, pkg/turn, the edge, the server,
// Prometheus or HTTP; it knows nothing about credentials or drains.
package relay
