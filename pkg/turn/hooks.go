package turn

import (
	"net/netip"

	"github.com/pion/stun/v4"

	"github.com/turnd/turnd/internal/bindings"
	"github.com/turnd/turnd/pkg/allocation"
)

// Ended is allocation.Hooks.Ended: an allocation left the table, whatever
// the reason. Its relay sockets close, a stream client's connection is
// idle again (limits.idle_connection_timeout applies), and Events gets the
// usage record.
func (h *Handler) Ended(a *allocation.Allocation, why allocation.EndReason) {
	h.relays.Close(a.Route, bindings.Both)
	// A moved allocation's connection went with it.
	if s := a.Route.Client.Stream; s != nil && why != allocation.EndMoved {
		s.Idle(true)
	}
	if h.admission != nil && why != allocation.EndMoved { // a moved one counts with its successor
		h.admission.Release(a.User)
	}
	h.events.Ended(a, why, a.Usage())
}

// FamilyEnded is allocation.Hooks.FamilyEnded: one family of a dual
// allocation ended (RFC 8656 §8.2), its relayed address closes.
func (h *Handler) FamilyEnded(a *allocation.Allocation, f bindings.Families, _ netip.AddrPort) {
	h.relays.Close(a.Route, f)
}

// Unreserved is allocation.Hooks.Unreserved: a RESERVATION-TOKEN left
// unused, its held port is released.
func (h *Handler) Unreserved(r allocation.Reservation) { h.relays.Unhold(r.Port, r.V6) }

// ConnExpired is allocation.Hooks.ConnExpired: an RFC 6062 peer
// connection saw no ConnectionBind within 30 s (§5.3), it is closed.
func (h *Handler) ConnExpired(a *allocation.Allocation, id uint32) {
	if c, ok := h.relays.TakePeer(a.Route, id); ok {
		_ = c.Close()
	}
}

// PeerArrived is called by the relay when a peer opened a connection to
// an RFC 6062 allocation's relayed address (§5.3): "If no permission for
// this peer has been installed for this allocation, the server MUST reject
// the connection"; otherwise the connection is recorded and the client
// told with a ConnectionAttempt indication carrying CONNECTION-ID and
// XOR-PEER-ADDRESS. ok false: close the connection.
func (h *Handler) PeerArrived(r *bindings.Route, peer netip.AddrPort) (id uint32, ok bool) {
	a, found := h.table.Get(r.Client.Tuple)
	if !found || a.Route != r {
		return 0, false
	}
	if _, permitted := a.Permission(peer.Addr()); !permitted {
		return 0, false
	}
	p := h.policy.Load()
	id, err := h.table.AddConnection(a, peer, h.now(), p.MaxPendingConnects)
	if err != nil {
		return 0, false
	}
	m := stun.New()
	m.TransactionID = stun.NewTransactionID()
	m.SetType(stun.NewType(methodConnectionAttempt, stun.ClassIndication))
	m.WriteHeader()
	_ = connectionID(id).AddTo(m)
	_ = xorAddress{stun.AttrXORPeerAddress, peer}.AddTo(m)
	_ = stun.Fingerprint.AddTo(m)
	r.Client.Send(m.Raw)
	return id, true
}

// methodConnectionAttempt is RFC 6062's ConnectionAttempt (§6.1).
const methodConnectionAttempt stun.Method = 0x000C
