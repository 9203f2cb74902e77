package turn

import (
	"io"
	"net/netip"

	"github.com/turnd/turnd/internal/bindings"
)

// Relays is what the handlers ask of the relay (*relay.Relay): sockets for
// a route, and RFC 6062 peer connections. Its methods never block on the
// network.
type Relays interface {
	// Open binds what w asks for the route: one relayed address per asked
	// family, or why that family was refused.
	Open(r *bindings.Route, w bindings.Want) (bindings.Relayed, error)
	// Close closes the route's relayed addresses of the families f.
	Close(r *bindings.Route, f bindings.Families)
	// Unhold releases a port held for a RESERVATION-TOKEN that expired.
	Unhold(port int, v6 bool)
	// Connect dials peer from the route's relayed address off the caller's
	// goroutine (RFC 6062 §5.2) and calls done with the outcome.
	Connect(r *bindings.Route, peer netip.AddrPort, id uint32, done func(error)) error
	// TakePeer hands over the connected peer of CONNECTION-ID id, once.
	TakePeer(r *bindings.Route, id uint32) (io.ReadWriteCloser, bool)
}
