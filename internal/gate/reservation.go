package gate

import (
	"net"
	"sync/atomic"
	"time"

	"github.com/pion/stun/v4"

	"github.com/turnd/turnd/internal/netaddr"
	"github.com/turnd/turnd/internal/wire"
)

// RFC 8656 §7.2 EVEN-PORT with R=1 makes the server hold the next port for
// 30 s and hand out a RESERVATION-TOKEN; a later Allocate presenting the
// token gets that port (coturn's uclient does this for every RTP/RTCP pair).
//
// pion keeps reservations in the allocation table of the socket that saw the
// first Allocate, but in a SO_REUSEPORT group the second Allocate comes from
// another client port and usually lands on another socket, which answers 508.
// So the gate keeps the token→port table for the whole group: it reads
// tokens from pion's success responses and turns a token request into a
// plain Allocate plus a port hint for the relay generator of the socket that
// handles it.

// reservationLifetime is how long a token stays valid (RFC 8656 §7.2: 30 s).
const reservationLifetime = 30 * time.Second

// PortHint carries, from the gate to the relay generator of the same UDP
// socket, the relay port a reservation token resolved to, or the request to
// reserve a pair (EVEN-PORT with R: the generator then holds P+1 bound for
// the token, as coturn does, so nothing else can take it meanwhile), or to
// get an even port without one (EVEN-PORT with R=0, which the gate hides
// from pion: pion would issue a token for it). pion handles a socket's
// packets one at a time on one goroutine, so the hint set for a packet is
// consumed while that packet is handled and cleared before the next.
type PortHint struct {
	port    atomic.Int32
	reserve atomic.Bool
	even    atomic.Bool
}

// Hint values asking for an even/odd pair, and for an even port alone.
const (
	reservePair = -1
	evenPort    = -2
)

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

func (h *PortHint) set(p int) {
	h.reserve.Store(p == reservePair)
	h.even.Store(p == evenPort)
	h.port.Store(int32(max(p, 0)))
}

// isAllocateAnswer is noteResponse's two-byte look.
func isAllocateAnswer(b []byte) bool {
	if len(b) < wire.HeaderSize {
		return false
	}
	t := wire.Type(b)
	return t == wire.TypeAllocateSuccess || t == wire.TypeAllocateError
}

// noteResponse learns reservation tokens from pion's Allocate success
// responses to client, which reached the socket at server, and forgets
// the reservation an answered Allocate asked for.
func (g *Gate) noteResponse(b []byte, client, server net.Addr) {
	if !isAllocateAnswer(b) {
		return
	}
	// Whatever the answer, the Allocate that asked for a reservation is done.
	user, _ := g.reserving.take(netaddr.Of(client, server))
	if wire.Type(b) != wire.TypeAllocateSuccess {
		return
	}
	msg := &stun.Message{Raw: append([]byte(nil), b...)}
	if msg.Decode() != nil {
		return
	}
	token, err := msg.Get(stun.AttrReservationToken)
	if err != nil {
		return
	}
	var relayed stun.XORMappedAddress
	if relayed.GetFromAs(msg, stun.AttrXORRelayedAddress) != nil {
		return
	}
	now := time.Now()
	g.reservations.put(string(token), reservation{port: relayed.Port + 1, expires: now.Add(reservationLifetime), user: user}, now)
}

// reservedPort resolves a RESERVATION-TOKEN to its port (once).
func (g *Gate) reservedPort(token []byte) (int, bool) {
	r, ok := g.reservations.take(string(token), time.Now())
	if !ok {
		return 0, false
	}
	return r.port, true
}
