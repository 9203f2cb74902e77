// Package relay creates the peer-facing relay sockets of TURN allocations:
// bound to the configured relay address, inside the configured port range,
// advertising the external address, with DONT-FRAGMENT applied on request,
// and counting the packets and bytes relayed through them.
//
// It implements pion/turn's RelayAddressGenerator. It knows nothing about
// credentials, drains, HTTP or Prometheus.
package relay
