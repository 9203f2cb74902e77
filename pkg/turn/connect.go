package turn

import (
	"errors"

	"github.com/pion/stun/v4"

	"github.com/turnd/turnd/internal/bindings"
	"github.com/turnd/turnd/pkg/allocation"
)

// connect serves an RFC 6062 Connect (§5.2) on the request's allocation,
// which exists and is the user's (method.go; over UDP it was 400 there):
//
//   - on a UDP allocation there is no TCP relay to dial from: 400; TCP
//     relaying switched off by a reload since the allocation was made: 403;
//   - "If the request does not contain an XOR-PEER-ADDRESS attribute, or
//     if such attribute is invalid, the server MUST return a 400": port 0
//     is invalid;
//   - "If the new connection would not be permitted under the current set
//     of permissions for this allocation, the server MUST return a 403
//     (Forbidden) error": the peer filter and turnd's own sockets;
//   - "If the server is currently processing a Connect request for this
//     allocation with the same XOR-PEER-ADDRESS, it MUST return a 446
//     (Connection Already Exists) error", and so when connected;
//   - each pending Connect holds a socket: past the cap, 508;
//   - "Otherwise, the server MUST initiate an outgoing TCP connection [...]
//     If the connection attempt fails or times out, the server MUST
//     return a 447 (Connection Timeout or Failure) error", else a success
//     with CONNECTION-ID. The relay dials off the reader; the answer is
//     written when it is done.
func (h *Handler) connect(r *Request) {
	a, p := r.Alloc, r.policy
	switch {
	case !a.PeerTCP:
		h.fail(r, stun.CodeBadRequest)
		return
	case !p.TCPAllocations:
		h.fail(r, stun.CodeForbidden)
		return
	}
	peer, ok := peerAddress(r.Msg)
	if !ok || peer.Port() == 0 {
		h.fail(r, stun.CodeBadRequest)
		return
	}
	if !h.peerAllowed(r, peer) {
		return
	}
	id, err := h.table.AddConnection(a, peer, r.Now, p.MaxPendingConnects)
	switch {
	case errors.Is(err, allocation.ErrConnectionExists):
		h.fail(r, stun.CodeConnAlreadyExists)
		return
	case errors.Is(err, allocation.ErrConnectionQuota):
		h.events.Refused(r.Msg.Type.Method.String(), RefusedCapacity, r.User, r.From.Tuple.Client)
		h.fail(r, stun.CodeInsufficientCapacity)
		return
	case err != nil:
		h.fail(r, stun.CodeAllocMismatch) // ended since it was looked up
		return
	}
	// The answer outlives Serve: it keeps the transaction, not the message.
	later := r.detach(&a.Route.Client)
	done := func(err error) {
		if err == nil && !h.table.ConnectionReady(id, h.now()) {
			// The allocation ended while the relay dialled: nobody will
			// bind the peer, so it is closed here.
			if c, ok := h.relays.TakePeer(a.Route, id); ok {
				_ = c.Close()
			}
			err = allocation.ErrNoConnection
		}
		if err != nil {
			h.table.DropConnection(id)
			h.fail(later, stun.CodeConnTimeoutOrFailure)
			return
		}
		h.succeed(later, connectionID(id))
	}
	if err := h.relays.Connect(a.Route, peer, id, done); err != nil {
		done(err)
	}
}

// detach is r as an answer written after Serve returned needs it: the
// transaction and the key, not the message bytes, to from.
func (r *Request) detach(from *bindings.Client) *Request {
	return &Request{
		Msg:  &stun.Message{Type: r.Msg.Type, TransactionID: r.Msg.TransactionID},
		From: from, Now: r.Now, User: r.User, Username: r.Username, Realm: r.Realm, Key: r.Key,
		Alloc: r.Alloc, policy: r.policy, fingerprint: r.fingerprint,
	}
}

// connectionID is a CONNECTION-ID attribute (RFC 6062 §6.2.1).
func connectionID(id uint32) stun.Setter {
	return stun.RawAttribute{Type: stun.AttrConnectionID, Value: []byte{byte(id >> 24), byte(id >> 16), byte(id >> 8), byte(id)}}
}
