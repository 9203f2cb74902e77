package edge

import (
	"net/netip"

	"github.com/turnd/turnd/internal/bindings"
)

// FastPath relays a client's data packet (ChannelData, Send indication)
// itself and reports whether it did; what it does not take goes to the
// Handler. It is offered every packet and
// must say no to the rest cheaply. The relay supplies one per lane
// (relay.RelayFor) and per stream listener address (relay.RelayStreamFor).
type FastPath func(pkt []byte, client netip.AddrPort) bool

// Handler serves one STUN message of a client: (*turn.Handler).Serve. msg
// is valid only during the call. from stays valid for a stream's life (the
// connection's own value), but a lane reuses its value for every datagram:
// a handler that keeps a UDP client copies *from. The handler answers
// through from.Send, inline; it must not block, for a plain TCP client is
// served on a relay loop that serves other clients too.
type Handler func(msg []byte, from *bindings.Client)
