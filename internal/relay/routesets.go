package relay

import (
	"io"
	"net/netip"

	"github.com/turnd/turnd/internal/bindings"
)

// pion's writes of a route's sets: until the allocation table writes the
// routes itself, the server forwards pion's permission and channel events
// (Permit, BindChannel) and a reload's denials (Revoke) here. Each write
// stores a fresh slice, so the fast path reads the route without a lock;
// the caller holds the lock that serialises the route's writers.

// permit adds peer's permission to r (or with remove, drops it), counting
// a new one in r's tally.
func permit(r *bindings.Route, peer netip.Addr, remove bool) {
	var next []netip.Addr
	had := false
	for _, a := range r.Permissions() {
		if a != peer {
			next = append(next, a)
		} else {
			had = true
		}
	}
	if !remove {
		next = append(next, peer)
		if !had {
			r.Usage.CountPermission()
		}
	}
	r.SetPermissions(next)
}

// bindChannel binds number to peer in r (or with remove, unbinds it); a
// binding of either to something else goes, as pion replaced it.
func bindChannel(r *bindings.Route, peer netip.AddrPort, number uint16, remove bool) {
	var next []bindings.Channel
	had := false
	for _, ch := range r.Channels() {
		switch {
		case ch.Number != number && ch.Peer != peer:
			next = append(next, ch)
		case ch.Number == number && ch.Peer == peer:
			had = true
		}
	}
	if !remove {
		next = append(next, bindings.Channel{Number: number, Peer: peer})
		if !had {
			r.Usage.CountChannel()
		}
	}
	r.SetChannels(next)
}

// revokeRoute drops r's permissions and channels whose peer is denied and
// returns how many of each it dropped.
func revokeRoute(r *bindings.Route, denied func(netip.Addr) bool) (permissions, channels int) {
	perms := make([]netip.Addr, 0, len(r.Permissions()))
	for _, a := range r.Permissions() {
		if denied(a) {
			permissions++
			continue
		}
		perms = append(perms, a)
	}
	chans := make([]bindings.Channel, 0, len(r.Channels()))
	for _, ch := range r.Channels() {
		if denied(ch.Peer.Addr()) {
			channels++
			continue
		}
		chans = append(chans, ch)
	}
	if permissions > 0 {
		r.SetPermissions(perms)
	}
	if channels > 0 {
		r.SetChannels(chans)
	}
	return permissions, channels
}

// pionStream is the stream of a TCP or TLS client as pion's server hands
// it over (AttachClient): a writer, which may also write without waiting.
// The edge keeps the connection's life, so only the writes are the
// relay's.
type pionStream struct {
	io.Writer
	try tryWriter // nil: Write, which may wait (TLS)
}

// tryWriter writes whole messages now or reports false (mmsg.Raw).
type tryWriter interface {
	TryWritev(msgs [][]byte) bool
}

func newPionStream(w io.Writer) *pionStream {
	s := &pionStream{Writer: w}
	s.try, _ = w.(tryWriter)
	return s
}

// TryWritev writes frames now or none; a writer that cannot try writes
// them one by one, as pion's read loop did for TLS clients.
func (s *pionStream) TryWritev(frames [][]byte) bool {
	if s.try != nil {
		return s.try.TryWritev(frames)
	}
	for _, f := range frames {
		_, _ = s.Write(f)
	}
	return true
}

// Idle, Pipe and Close are the edge's, which pion's plane calls itself.
func (s *pionStream) Idle(bool)               {}
func (s *pionStream) Pipe(io.ReadWriteCloser) {}
func (s *pionStream) Close() error            { return nil }
