package relay

import "errors"

var (
	// ErrNoFreePort means every port of the relay range is taken (answered 508).
	ErrNoFreePort = errors.New("no free relay port in range")
	// ErrNoAddressForFamily means no relay address of the requested IP family is configured.
	ErrNoAddressForFamily = errors.New("no relay address of the requested family")
	// ErrNotTracked means a relay address does not belong to a live relay socket.
	ErrNotTracked = errors.New("relay socket not found")
	// ErrNoClientWriter means a relay served by a downlink loop was not given
	// a way to reach its client, so nothing from its peers would arrive.
	ErrNoClientWriter = errors.New("no writer for the client of a loop-served relay")
	// ErrForbiddenPeer means a Connect asked for one of the server's own sockets.
	ErrForbiddenPeer = errors.New("peer is one of the server's own sockets")
	// ErrTooManyConnects means an allocation has MaxPendingConnects Connects pending.
	ErrTooManyConnects = errors.New("too many pending connects on the allocation")
	// ErrRouteOpen means Open was called again for a route already open.
	ErrRouteOpen = errors.New("route already open")
	// ErrNotMovable means a relay cannot go to another process this way:
	// an RFC 6062 relay asked of Export or Adopt (ExportTCP and AdoptTCP
	// move it).
	ErrNotMovable = errors.New("relay cannot move to another process")
	// ErrNotPaused means descriptors were asked for while the downlink
	// loops may still read them (see Pause).
	ErrNotPaused = errors.New("relay not paused")
	// ErrPortTaken means an adopted socket's port is already held here.
	ErrPortTaken = errors.New("relay port already held")
	// ErrSocketMismatch means an adopted socket is not of the family or
	// port it was passed for.
	ErrSocketMismatch = errors.New("socket does not match its relay family or port")
)
