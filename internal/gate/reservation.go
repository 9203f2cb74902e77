package gate

import (
	"net"
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
// plain Allocate plus a PortRequest for the relay of the socket that
// handles it.

// reservationLifetime is how long a token stays valid (RFC 8656 §7.2: 30 s).
const reservationLifetime = 30 * time.Second

// PortRequest is what an Allocate asks of its relay port, for the relay
// of the UDP socket pion handles it on: the port a reservation token
// resolved to (positive), an even/odd pair to hold for a token (EVEN-PORT
// with R: P+1 stays bound, as coturn does, so nothing else takes it), an
// even port alone (EVEN-PORT with R=0, hidden from pion, which would issue
// a token for it), or nothing (0).
type PortRequest int

// The PortRequests that are not a port.
const (
	PortPair PortRequest = -1
	PortEven PortRequest = -2
)

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
