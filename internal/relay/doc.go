// Package relay creates the peer-facing relay sockets of TURN allocations —
// bound to the configured relay address, inside the configured port range,
// advertising the external address, with DONT-FRAGMENT applied on request —
// and relays data through them without pion: ChannelData and Send/Data
// indications both ways (uplink.go, conn.go), the peer → client direction
// in a few epoll loops over many relay sockets (downlink.go), which also
// read plain TCP clients' connections for the gate (streamread.go). pion still
// owns the control protocol; the server mirrors its permissions and
// channels in here, so expiry applies to the fast path too. It counts the
// packets and bytes relayed, and those it had to drop. It also keeps pion's
// late relay goroutine from deleting a client's next allocation (retire.go).
// RFC 6062 TCP relays hold their ports in the same table as UDP ones, dial
// Connects with a deadline and bound the pending ones (tcprelay.go), and
// count their permissions and channels for the caps (tcpbindings.go).
//
// pkg/server adapts it to pion/turn's RelayAddressGenerator. It knows nothing about
// credentials, drains, HTTP or Prometheus.
package relay
