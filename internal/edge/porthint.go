package edge

import (
	"sync/atomic"

	"github.com/turnd/turnd/internal/gate"
)

// PortHint carries, from a UDP socket's reader to the relay generator of
// the same socket, what the Allocate being handled asks of its relay port
// (see gate.PortRequest). pion handles a socket's packets one at a time on
// one goroutine, so the hint set for a packet is consumed while that packet
// is handled and cleared before the next.
type PortHint struct {
	req atomic.Int32 // a gate.PortRequest: one store per datagram
}

// Take returns the hinted port (0 if none) and clears it.
func (h *PortHint) Take() int {
	if h == nil {
		return 0
	}
	if p := h.req.Load(); p > 0 && h.req.CompareAndSwap(p, 0) {
		return int(p)
	}
	return 0
}

// TakeReserve reports (once) whether the Allocate being handled asked to
// reserve the next port.
func (h *PortHint) TakeReserve() bool {
	return h != nil && h.req.CompareAndSwap(int32(gate.PortPair), 0)
}

// TakeEven reports (once) whether the Allocate being handled asked for an
// even port and no reservation.
func (h *PortHint) TakeEven() bool {
	return h != nil && h.req.CompareAndSwap(int32(gate.PortEven), 0)
}

func (h *PortHint) set(p gate.PortRequest) { h.req.Store(int32(p)) }
