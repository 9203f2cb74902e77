package edge

// Edge holds the client connections of one server: the UDP socket groups it
// reads (ServeUDP) and the TCP/TLS listeners it accepts on (ServeStreams),
// each message handed to the server's Handler. Safe for concurrent use.
type Edge struct {
	// panicked, if not nil, hears of a panic that handling one packet
	// recovered from; the packet is dropped and every other client carries on.
	panicked func(v any)
	// own is the state of the readers (ServeUDP, ServeStreams).
	own ownPlane
}

// New returns an edge; panicked may be nil.
func New(panicked func(v any)) *Edge {
	return &Edge{panicked: panicked, own: newOwnPlane()}
}

// recovered reports a panic recovered while handling one packet.
func (e *Edge) recovered(v any) {
	if e.panicked != nil {
		e.panicked(v)
	}
}
