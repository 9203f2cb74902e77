package allocation

import (
	"encoding/hex"
	"fmt"
	"net/netip"

	"github.com/turnd/turnd/internal/bindings"
	"github.com/turnd/turnd/internal/clientip"
	"github.com/turnd/turnd/internal/netaddr"
)

// Restore builds a table from a snapshot, under quotas l and with hooks h,
// that serves as the one written out did: the same allocations with their
// deadlines, permissions, channels, reservations, connection records and
// counters. client gives each allocation's bindings.Client (the edge
// finds the socket of its 5-tuple); an error from it, or a record that
// contradicts another, fails the whole restore and returns no table. The
// caller reads s.NonceSecret itself.
func Restore(s Snapshot, l Limits, h Hooks, client func(netaddr.FiveTuple) (bindings.Client, error)) (*Table, error) {
	t := New(l, h)
	if err := t.Restore(s, client); err != nil {
		return nil, err
	}
	return t, nil
}

// Restore fills t, which must be empty and not yet serving (no Admit, no
// Run), from a snapshot, as the package's Restore does; on error t is left
// empty. The server restores into the table the drain and the metrics
// already hold.
func (t *Table) Restore(s Snapshot, client func(netaddr.FiveTuple) (bindings.Client, error)) error {
	if s.Version != SnapshotVersion {
		return fmt.Errorf("restore snapshot: %w", ErrSnapshotVersion)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.byTuple) > 0 || len(t.tokens) > 0 || t.ending > 0 || t.admitted > 0 {
		return fmt.Errorf("restore snapshot: %w", ErrTableInUse)
	}
	if err := t.restoreAll(s, client); err != nil {
		t.clear()
		return err
	}
	t.recount()
	return nil
}

// restoreAll adds s's records to t; t.mu is held.
func (t *Table) restoreAll(s Snapshot, client func(netaddr.FiveTuple) (bindings.Client, error)) error {
	tokens := make(map[string]SnapshotReservation, len(s.Reservations))
	for _, r := range s.Reservations {
		tokens[r.Token] = r
	}
	for _, sa := range s.Allocations {
		a, err := t.restore(sa, client, tokens)
		if err != nil {
			return fmt.Errorf("restore allocation of %v: %w", sa.Client, err)
		}
		t.byTuple[a.Tuple] = a
		t.book(a.book)
		t.byTransport[a.Transport]++
	}
	if len(tokens) > 0 {
		return fmt.Errorf("restore snapshot: %d reservations held by no allocation: %w", len(tokens), ErrSnapshotInvalid)
	}
	return nil
}

// restore makes one allocation of t from its record; t.mu is held. Used
// tokens leave tokens.
func (t *Table) restore(sa SnapshotAllocation, client func(netaddr.FiveTuple) (bindings.Client, error),
	tokens map[string]SnapshotReservation) (*Allocation, error) {
	tr, ok := parseTransport(sa.Transport)
	if !ok || tr == TLS {
		return nil, fmt.Errorf("transport %q: %w", sa.Transport, ErrSnapshotInvalid)
	}
	tp := netaddr.FiveTuple{Client: netaddr.Unmap(sa.Client), Server: netaddr.Unmap(sa.Server), TCP: tr != UDP}
	if !tp.Client.IsValid() || !tp.Server.IsValid() {
		return nil, fmt.Errorf("5-tuple: %w", ErrSnapshotInvalid)
	}
	if _, dup := t.byTuple[tp]; dup {
		return nil, fmt.Errorf("5-tuple twice: %w", ErrSnapshotInvalid)
	}
	a := &Allocation{Tuple: tp, Transport: tr, User: sa.User, Username: sa.Username, Realm: sa.Realm,
		Created: sa.Created, DontFragment: sa.DontFragment, PeerTCP: sa.TCP != nil, carried: sa.Usage.carried(),
		t: t, book: &booking{user: sa.User, ip: tp.Client.Addr(), tr: tr, used: true}}
	if err := decodeHex(a.TxID[:], sa.TxID); err != nil {
		return nil, fmt.Errorf("tx_id: %w", err)
	}
	c, err := client(tp)
	if err != nil {
		return nil, fmt.Errorf("find client: %w", err)
	}
	a.Route = &bindings.Route{Client: c}
	for _, r := range sa.Relayed {
		if err := t.restoreRelayed(a, r); err != nil {
			return nil, err
		}
	}
	if !a.relayed[0].addr.IsValid() && !a.relayed[1].addr.IsValid() {
		return nil, ErrNoRelayed
	}
	for _, p := range sa.Permissions {
		if a.permission(p.Peer.Unmap()) != nil {
			return nil, fmt.Errorf("permission of %v twice: %w", p.Peer, ErrSnapshotInvalid)
		}
		e := &permission{peer: p.Peer.Unmap(), expires: p.Expires}
		a.perms = append(a.perms, e)
		t.schedule(&e.item, e.expires, due{kind: duePermission, a: a, entry: e})
	}
	if err := t.restoreChannels(a, sa.Channels); err != nil {
		return nil, err
	}
	if sa.TCP != nil {
		for _, c := range sa.TCP.Connections {
			if _, dup := t.byConn[c.ID]; dup || c.ID == 0 {
				return nil, fmt.Errorf("connection %d: %w", c.ID, ErrSnapshotInvalid)
			}
			t.putConnection(a, &peerConn{id: c.ID, peer: netaddr.Unmap(c.Peer), bound: c.Bound, expires: c.Expires})
		}
	}
	if sa.Held != "" {
		r, ok := tokens[sa.Held]
		if !ok {
			return nil, fmt.Errorf("held token %s: %w", sa.Held, ErrSnapshotInvalid)
		}
		delete(tokens, sa.Held)
		res := Reservation{Port: r.Port, V6: r.V6, User: r.User, Expires: r.Expires, Holder: tp}
		if err := decodeHex(res.Token[:], r.Token); err != nil {
			return nil, fmt.Errorf("token: %w", err)
		}
		t.putReservation(res, a)
	}
	a.publishPermissions()
	a.publishChannels()
	return a, nil
}

func (t *Table) restoreRelayed(a *Allocation, r SnapshotRelayed) error {
	addr := netaddr.Unmap(r.Addr)
	if !addr.IsValid() {
		return fmt.Errorf("relayed address: %w", ErrSnapshotInvalid)
	}
	i := bindings.Of(addr.Addr()).Index()
	if a.relayed[i].addr.IsValid() {
		return fmt.Errorf("two relayed addresses of one family: %w", ErrSnapshotInvalid)
	}
	if _, dup := t.byRelay[addr]; dup {
		return fmt.Errorf("relayed %v: %w", addr, ErrRelayInUse)
	}
	a.relayed[i] = relayAddr{addr: addr, expires: r.Expires}
	t.byRelay[addr] = a
	t.schedule(&a.relayed[i].item, r.Expires, due{kind: dueFamily, a: a, n: uint32(i)})
	return nil
}

func (t *Table) restoreChannels(a *Allocation, chans []SnapshotChannel) error {
	for _, c := range chans {
		peer := netaddr.Unmap(c.Peer)
		if a.channel(c.Number) != nil {
			return fmt.Errorf("channel %#x twice: %w", c.Number, ErrSnapshotInvalid)
		}
		for _, o := range a.chans {
			if o.peer == peer {
				return fmt.Errorf("peer %v on two channels: %w", peer, ErrSnapshotInvalid)
			}
		}
		e := &channel{number: c.Number, peer: peer, expires: c.Expires, cooling: c.Cooling}
		a.chans = append(a.chans, e)
		at := e.expires
		if e.cooling {
			at = at.Add(ChannelCooldown)
		}
		t.schedule(&e.item, at, due{kind: dueChannel, a: a, entry: e})
	}
	return nil
}

// decodeHex fills dst from s, which must encode exactly len(dst) bytes.
func decodeHex(dst []byte, s string) error {
	if hex.DecodedLen(len(s)) != len(dst) {
		return fmt.Errorf("%q is not %d bytes of hex: %w", s, len(dst), ErrSnapshotInvalid)
	}
	if _, err := hex.Decode(dst, []byte(s)); err != nil {
		return fmt.Errorf("decode hex: %w", err)
	}
	return nil
}

// parseTransport reads Transport.String's names back.
func parseTransport(s string) (Transport, bool) {
	for _, tr := range Transports() {
		if tr.String() == s {
			return tr, true
		}
	}
	return 0, false
}

// clear empties t after a failed restore; t.mu is held, and no hook ran.
func (t *Table) clear() {
	t.byTuple = make(map[netaddr.FiveTuple]*Allocation)
	t.byRelay = make(map[netip.AddrPort]*Allocation)
	t.byConn = make(map[uint32]*Allocation)
	t.perUser = make(map[string]int)
	t.clients = clientip.Counts{}
	t.byTransport = [numTransports]int{}
	t.tokens = make(map[[8]byte]*reservation)
	t.userTokens = make(map[string]int)
	t.due = nil
}

// Movable reports whether a can be handed over to a successor process and
// is in a Snapshot: a TLS client's session keys stay in this process. An
// RFC 6062 allocation moves with its connection records: its relay's
// sockets and pipes go with it (the server passes them).
func Movable(a *Allocation) bool { return a.Transport != TLS }
