package edge

import (
	"github.com/turnd/turnd/internal/gate"
)

// Edge holds the client connections of one server: the UDP socket groups and
// TCP/TLS listeners it wraps (PacketConn, Listener) read and write through it
// and ask its gate about every message. Safe for concurrent use.
type Edge struct {
	gate *gate.Gate
	// streams are the live TCP/TLS client connections.
	streams streamTable
	// flight counts the messages pion is handling (Quiesce).
	flight *inFlight
	// panicked, if not nil, hears of a panic that handling one packet
	// recovered from; the packet is dropped and every other client carries on.
	panicked func(v any)
	// own is the state of the own control plane's readers (ServeUDP,
	// ServeStreams); pion's plane does not use it.
	own ownPlane
}

// New returns an edge asking g; panicked may be nil. g may be nil too when
// only the own plane's ServeUDP and ServeStreams are used: they ask no gate.
func New(g *gate.Gate, panicked func(v any)) *Edge {
	return &Edge{gate: g, flight: newInFlight(), panicked: panicked, own: newOwnPlane()}
}

// recovered reports a panic recovered while handling one packet.
func (e *Edge) recovered(v any) {
	if e.panicked != nil {
		e.panicked(v)
	}
}
