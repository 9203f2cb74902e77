package allocation

import (
	"bytes"
	"cmp"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/netip"
	"slices"
	"time"

	"github.com/turnd/turnd/internal/traffic"
)

// SnapshotVersion is the version of the snapshot format this binary
// writes and the only one it reads.
const SnapshotVersion = 1

// Snapshot is the table written out for another process to serve
// identically (issue 24's hand-over): every allocation but TLS clients'
// (their keys cannot move), with deadlines as wall-clock times. It holds
// no descriptors, keys or pointers; NonceSecret is the caller's to set
// and read (the table holds no nonces).
type Snapshot struct {
	Version      int                   `json:"version"`
	NonceSecret  []byte                `json:"nonce_secret"`
	Allocations  []SnapshotAllocation  `json:"allocations"`
	Reservations []SnapshotReservation `json:"reservations"`
}

// SnapshotAllocation is one allocation in a Snapshot.
type SnapshotAllocation struct {
	Client       netip.AddrPort       `json:"client"`
	Server       netip.AddrPort       `json:"server"`
	Transport    string               `json:"transport"`
	User         string               `json:"user"`
	Username     string               `json:"username"`
	Realm        string               `json:"realm"`
	Created      time.Time            `json:"created"`
	TxID         string               `json:"tx_id"` // hex
	DontFragment bool                 `json:"dont_fragment"`
	Relayed      []SnapshotRelayed    `json:"relayed"`
	Permissions  []SnapshotPermission `json:"permissions"`
	Channels     []SnapshotChannel    `json:"channels"`
	Usage        SnapshotUsage        `json:"usage"`
	Held         string               `json:"held"` // the token of its reservation, hex; empty: none
	TCP          *SnapshotTCP         `json:"tcp,omitempty"`
}

// SnapshotRelayed is one family's relayed address and its deadline.
type SnapshotRelayed struct {
	Addr    netip.AddrPort `json:"addr"`
	Expires time.Time      `json:"expires"`
}

// SnapshotPermission is one permission.
type SnapshotPermission struct {
	Peer    netip.Addr `json:"peer"`
	Expires time.Time  `json:"expires"`
}

// SnapshotChannel is one channel binding; Cooling marks one past its
// expiry, whose number and peer stay reserved until Expires plus
// ChannelCooldown.
type SnapshotChannel struct {
	Number  uint16         `json:"number"`
	Peer    netip.AddrPort `json:"peer"`
	Expires time.Time      `json:"expires"`
	Cooling bool           `json:"cooling,omitempty"`
}

// SnapshotUsage is an allocation's traffic so far.
type SnapshotUsage struct {
	ToPeerPackets   uint64 `json:"to_peer_packets"`
	ToPeerBytes     uint64 `json:"to_peer_bytes"`
	FromPeerPackets uint64 `json:"from_peer_packets"`
	FromPeerBytes   uint64 `json:"from_peer_bytes"`
	Permissions     uint64 `json:"permissions"`
	Channels        uint64 `json:"channels"`
	RateLimited     uint64 `json:"rate_limited"`
	NoPermission    uint64 `json:"no_permission"`
}

// SnapshotTCP marks an RFC 6062 allocation and holds its peer connections.
type SnapshotTCP struct {
	Connections []SnapshotConnection `json:"connections"`
}

// SnapshotConnection is one RFC 6062 peer connection; Expires is its bind
// deadline while not bound.
type SnapshotConnection struct {
	ID      uint32         `json:"id"`
	Peer    netip.AddrPort `json:"peer"`
	Bound   bool           `json:"bound"`
	Expires time.Time      `json:"expires,omitzero"`
}

// SnapshotReservation is one reservation token.
type SnapshotReservation struct {
	Token   string    `json:"token"` // hex
	Port    int       `json:"port"`
	V6      bool      `json:"v6"`
	User    string    `json:"user"`
	Expires time.Time `json:"expires"`
}

// Snapshot writes the table out, in one critical section so that it is
// one instant's state, in a stable order (oldest allocation first).
func (t *Table) Snapshot() Snapshot { return t.SnapshotOf(func(*Allocation) bool { return true }) }

// SnapshotOf is Snapshot of the allocations keep accepts (the hand-over
// passes Movable); keep runs under the table's lock and reads only fields
// fixed at Insert.
func (t *Table) SnapshotOf(keep func(*Allocation) bool) Snapshot {
	s := t.snapshot(keep)
	// Sorted outside the lock, by index: the records are large to swap.
	order := make([]int, len(s.Allocations))
	for i := range order {
		order[i] = i
	}
	all := s.Allocations
	slices.SortFunc(order, func(i, j int) int {
		x, y := &all[i], &all[j]
		return cmp.Or(x.Created.Compare(y.Created), x.Client.Compare(y.Client),
			x.Server.Compare(y.Server), cmp.Compare(x.Transport, y.Transport))
	})
	s.Allocations = make([]SnapshotAllocation, len(all))
	for i, j := range order {
		s.Allocations[i] = all[j]
	}
	slices.SortFunc(s.Reservations, func(x, y SnapshotReservation) int { return cmp.Compare(x.Token, y.Token) })
	return s
}

// snapshot copies the table's records out under its lock, unsorted.
func (t *Table) snapshot(keep func(*Allocation) bool) Snapshot {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := Snapshot{Version: SnapshotVersion, Allocations: make([]SnapshotAllocation, 0, len(t.byTuple)),
		Reservations: []SnapshotReservation{}}
	for _, a := range t.byTuple {
		if a.Transport == TLS || !keep(a) {
			continue
		}
		s.Allocations = append(s.Allocations, a.snapshot())
		if r := a.held; r != nil {
			s.Reservations = append(s.Reservations, SnapshotReservation{Token: hexToken(r.r.Token),
				Port: r.r.Port, V6: r.r.V6, User: r.r.User, Expires: r.r.Expires.UTC()})
		}
	}
	return s
}

// snapshot writes a out; the table's lock is held.
func (a *Allocation) snapshot() SnapshotAllocation {
	s := SnapshotAllocation{
		Client: a.Tuple.Client, Server: a.Tuple.Server, Transport: a.Transport.String(),
		User: a.User, Username: a.Username, Realm: a.Realm, Created: a.Created.UTC(),
		TxID: hex.EncodeToString(a.TxID[:]), DontFragment: a.DontFragment,
		Relayed:     []SnapshotRelayed{},
		Permissions: make([]SnapshotPermission, 0, len(a.perms)),
		Channels:    make([]SnapshotChannel, 0, len(a.chans)),
		Usage:       snapshotUsage(addUsage(a.Route.Usage.Usage(), a.carried)),
	}
	for _, r := range a.relayed {
		if r.addr.IsValid() {
			s.Relayed = append(s.Relayed, SnapshotRelayed{Addr: r.addr, Expires: r.expires.UTC()})
		}
	}
	for _, e := range a.perms {
		s.Permissions = append(s.Permissions, SnapshotPermission{Peer: e.peer, Expires: e.expires.UTC()})
	}
	slices.SortFunc(s.Permissions, func(x, y SnapshotPermission) int { return x.Peer.Compare(y.Peer) })
	for _, c := range a.chans {
		s.Channels = append(s.Channels, SnapshotChannel{Number: c.number, Peer: c.peer, Expires: c.expires.UTC(), Cooling: c.cooling})
	}
	slices.SortFunc(s.Channels, func(x, y SnapshotChannel) int { return cmp.Compare(x.Number, y.Number) })
	if a.held != nil {
		s.Held = hexToken(a.held.r.Token)
	}
	if a.PeerTCP {
		s.TCP = &SnapshotTCP{Connections: make([]SnapshotConnection, 0, len(a.conns))}
		for id, c := range a.conns {
			s.TCP.Connections = append(s.TCP.Connections, SnapshotConnection{ID: id, Peer: c.peer, Bound: c.bound, Expires: utc(c.expires)})
		}
		slices.SortFunc(s.TCP.Connections, func(x, y SnapshotConnection) int { return cmp.Compare(x.ID, y.ID) })
	}
	return s
}

// utc is t in UTC, and zero when zero (omitted).
func utc(t time.Time) time.Time {
	if t.IsZero() {
		return t
	}
	return t.UTC()
}

func snapshotUsage(u traffic.Usage) SnapshotUsage {
	return SnapshotUsage{u.ToPeerPackets, u.ToPeerBytes, u.FromPeerPackets, u.FromPeerBytes,
		u.Permissions, u.Channels, u.RateLimited, u.NoPermission}
}

// carried is u as an allocation carries it over; nil when nothing was counted.
func (u SnapshotUsage) carried() *traffic.Usage {
	if u == (SnapshotUsage{}) {
		return nil
	}
	return &traffic.Usage{ToPeerPackets: u.ToPeerPackets, ToPeerBytes: u.ToPeerBytes,
		FromPeerPackets: u.FromPeerPackets, FromPeerBytes: u.FromPeerBytes,
		Permissions: u.Permissions, Channels: u.Channels, RateLimited: u.RateLimited, NoPermission: u.NoPermission}
}

// ParseSnapshot decodes a snapshot strictly: an unknown field, trailing
// data, or a version other than SnapshotVersion is refused, so a binary
// never half-understands another's state.
func ParseSnapshot(b []byte) (Snapshot, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	var s Snapshot
	err := d.Decode(&s)
	if err == nil && d.More() {
		err = ErrSnapshotTrailing
	}
	if err != nil || s.Version != SnapshotVersion {
		// Another version may well not parse as this one: say so first.
		var probe struct {
			Version *int `json:"version"`
		}
		if json.Unmarshal(b, &probe) == nil && (probe.Version == nil || *probe.Version != SnapshotVersion) {
			return Snapshot{}, fmt.Errorf("decode snapshot: %w", ErrSnapshotVersion)
		}
	}
	if err != nil {
		return Snapshot{}, fmt.Errorf("decode snapshot: %w", err)
	}
	return s, nil
}
