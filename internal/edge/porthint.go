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
	port    atomic.Int32
	reserve atomic.Bool
	even    atomic.Bool
}

// Take returns the hinted port (0 if none) and clears it.
func (h *PortHint) Take() int {
	if h == nil {
		return 0
	}
	return int(h.port.Swap(0))
}

// TakeReserve reports (once) whether the Allocate being handled asked to
// reserve the next port.
func (h *PortHint) TakeReserve() bool {
	if h == nil {
		return false
	}
	return h.reserve.Swap(false)
}

// TakeEven reports (once) whether the Allocate being handled asked for an
// even port and no reservation.
func (h *PortHint) TakeEven() bool {
	if h == nil {
		return false
	}
	return h.even.Swap(false)
}

func (h *PortHint) set(p gate.PortRequest) {
	h.reserve.Store(p == gate.PortPair)
	h.even.Store(p == gate.PortEven)
	h.port.Store(int32(max(p, 0)))
}
