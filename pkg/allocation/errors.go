package allocation

import "errors"

var (
	// ErrTotalQuota means the server already holds limits.total_allocations allocations.
	ErrTotalQuota = errors.New("total allocation quota reached")
	// ErrUserQuota means the user already holds limits.user_allocations allocations.
	ErrUserQuota = errors.New("user allocation quota reached")
	// ErrIPQuota means the client's IP address already holds limits.ip_allocations allocations.
	ErrIPQuota = errors.New("per-address allocation quota reached")
	// ErrPrefixQuota means the client's network (an IPv4 /24, an IPv6 /48)
	// already holds limits.prefix_allocations allocations.
	ErrPrefixQuota = errors.New("per-prefix allocation quota reached")
)

// The allocation table's refusals. The TURN handlers map each to its
// error code.
var (
	// ErrNotAdmitting means the table takes no new allocations: the drain
	// has begun (StopAdmitting).
	ErrNotAdmitting = errors.New("not admitting allocations")
	// ErrTicketUsed means a Ticket was inserted or cancelled already.
	ErrTicketUsed = errors.New("admission ticket already used")
	// ErrTicketMismatch means an allocation was inserted on a ticket
	// admitted for another user or transport.
	ErrTicketMismatch = errors.New("allocation does not match its ticket")
	// ErrExists means the 5-tuple already holds an allocation (437).
	ErrExists = errors.New("5-tuple already holds an allocation")
	// ErrNoRelayed means an allocation was inserted without any relayed address.
	ErrNoRelayed = errors.New("allocation has no relayed address")
	// ErrRelayInUse means a relayed address is another allocation's.
	ErrRelayInUse = errors.New("relayed address already in use")
	// ErrGone means the allocation has ended.
	ErrGone = errors.New("allocation has ended")
	// ErrFamilyMismatch means a peer or requested family is not one the
	// allocation has a relayed address of (443).
	ErrFamilyMismatch = errors.New("address family not allocated")
	// ErrPermissionQuota means the allocation holds the most permissions allowed (508).
	ErrPermissionQuota = errors.New("permission quota reached")
	// ErrChannelQuota means the allocation holds the most channels allowed (508).
	ErrChannelQuota = errors.New("channel quota reached")
	// ErrChannelNumberTaken means the channel number is bound, or cooling
	// down after its binding expired, to another peer (RFC 8656 §12.2: 400).
	ErrChannelNumberTaken = errors.New("channel number bound to another peer")
	// ErrChannelPeerTaken means the peer is bound, or cooling down, to
	// another channel number (RFC 8656 §12.2: 400).
	ErrChannelPeerTaken = errors.New("peer bound to another channel number")
)

// Reservation and RFC 6062 refusals.
var (
	// ErrReservationQuota means the user holds MaxReservationsPerUser live tokens (508).
	ErrReservationQuota = errors.New("reservation quota reached")
	// ErrTokenInUse means the token, or the holder's one reservation, is taken.
	ErrTokenInUse = errors.New("reservation token in use")
	// ErrConnectionExists means the allocation already has a connection to the peer (446).
	ErrConnectionExists = errors.New("connection to the peer already exists")
	// ErrConnectionQuota means the allocation holds the most peer connections allowed.
	ErrConnectionQuota = errors.New("peer connection quota reached")
	// ErrNoConnection means a CONNECTION-ID names no connection awaiting its bind (400).
	ErrNoConnection = errors.New("no such connection awaiting a bind")
)

// Snapshot refusals.
var (
	// ErrSnapshotVersion means a snapshot of a version this binary does not know.
	ErrSnapshotVersion = errors.New("unknown snapshot version")
	// ErrSnapshotTrailing means data after the snapshot's document.
	ErrSnapshotTrailing = errors.New("data after the snapshot")
	// ErrSnapshotInvalid means a snapshot whose records do not make a table.
	ErrSnapshotInvalid = errors.New("invalid snapshot")
	// ErrTableInUse means a restore into a table that holds allocations.
	ErrTableInUse = errors.New("table already holds allocations")
)
