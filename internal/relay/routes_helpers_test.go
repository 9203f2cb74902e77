package relay

import (
	"fmt"
	"io"
	"net"
	"net/netip"
	"testing"

	"github.com/turnd/turnd/internal/bindings"
	"github.com/turnd/turnd/internal/mmsg"
	"github.com/turnd/turnd/internal/netaddr"
	"github.com/turnd/turnd/internal/traffic"
)

// The tests' writes of a route's sets, standing in for the allocation
// table's (pkg/allocation): each write stores a fresh slice, so the fast
// path reads the route without a lock.

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
// binding of either to something else goes.
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

// writerStream is a stream client over a plain writer, which may also
// write without waiting; its life is the test's.
type writerStream struct {
	io.Writer
	try tryWriter // nil: Write, which may wait (TLS)
}

// tryWriter writes whole messages now or reports false (mmsg.Raw).
type tryWriter interface {
	TryWritev(msgs [][]byte) bool
}

func newWriterStream(w io.Writer) *writerStream {
	s := &writerStream{Writer: w}
	s.try, _ = w.(tryWriter)
	return s
}

// TryWritev writes frames now or none; a writer that cannot try writes
// them one by one.
func (s *writerStream) TryWritev(frames [][]byte) bool {
	if s.try != nil {
		return s.try.TryWritev(frames)
	}
	for _, f := range frames {
		_, _ = s.Write(f)
	}
	return true
}

// Idle, Pipe and Close are the edge's, which these tests do not exercise.
func (s *writerStream) Idle(bool)               {}
func (s *writerStream) Pipe(io.ReadWriteCloser) {}
func (s *writerStream) Close() error            { return nil }

// openUDPAt opens a one-family UDP route (network "udp4" or "udp6") for
// the client at client on turnd's address server, answered through lane,
// or through stream when lane is nil, as the Allocate handler opens one;
// it returns the relay socket and its address. The route closes with the
// test.
func (rl *Relay) openUDPAt(t testing.TB, network string, lane *mmsg.Socket, client, server net.Addr, stream bindings.Stream) (*Conn, *net.UDPAddr) {
	t.Helper()
	r := &bindings.Route{Client: bindings.Client{Tuple: netaddr.Of(client, server)}}
	if lane != nil {
		r.Client.Lane = lane
	} else {
		r.Client.Stream = stream
	}
	f := bindings.V4
	if network == "udp6" {
		f = bindings.V6
	}
	got, err := rl.Routes().Open(r, bindings.Want{Families: f})
	if err != nil {
		t.Fatalf("open %s relay: %v", network, err)
	}
	t.Cleanup(func() { rl.Routes().Close(r, bindings.Both) })
	rl.mu.Lock()
	c := rl.routes[r].socks[f.Index()]
	rl.mu.Unlock()
	return c, net.UDPAddrFromAddrPort(got.Addr[f.Index()])
}

// routeAt is the route of the UDP or RFC 6062 relay advertised as
// relayAddr, nil if none is live.
func (rl *Relay) routeAt(relayAddr net.Addr) *bindings.Route {
	ap := netaddr.AddrPort(relayAddr)
	k := liveKey{v6: !ap.Addr().Unmap().Is4(), port: int(ap.Port())}
	rl.mu.Lock()
	defer rl.mu.Unlock()
	if _, isTCP := relayAddr.(*net.TCPAddr); isTCP {
		if r := rl.tcp[k]; r != nil {
			return r.route
		}
		return nil
	}
	if c := rl.live[k]; c != nil {
		return c.route
	}
	return nil
}

// permitAt installs (or with revoke, removes) a permission for peer on the
// relay advertised as relayAddr, as CreatePermission does through the table.
func (rl *Relay) permitAt(relayAddr net.Addr, peer net.IP, revoke bool) error {
	r := rl.routeAt(relayAddr)
	if r == nil {
		return fmt.Errorf("permit on %v: %w", relayAddr, ErrNotTracked)
	}
	a, _ := netip.AddrFromSlice(peer)
	permit(r, a.Unmap(), revoke)
	return nil
}

// bindAt binds (or with unbind, unbinds) a channel to peer on the relay
// advertised as relayAddr, as ChannelBind does through the table.
func (rl *Relay) bindAt(relayAddr, peer net.Addr, number uint16, unbind bool) error {
	r := rl.routeAt(relayAddr)
	if r == nil {
		return fmt.Errorf("bind channel on %v: %w", relayAddr, ErrNotTracked)
	}
	bindChannel(r, netaddr.AddrPort(peer), number, unbind)
	return nil
}

// usageAt is the tally of the relay advertised as relayAddr.
func (rl *Relay) usageAt(relayAddr net.Addr) (traffic.Usage, error) {
	r := rl.routeAt(relayAddr)
	if r == nil {
		return traffic.Usage{}, fmt.Errorf("usage of %v: %w", relayAddr, ErrNotTracked)
	}
	return r.Usage.Usage(), nil
}
