package relay

import (
	"fmt"
	"io"
	"net"
	"net/netip"
	"testing"
	"time"

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

// dialRaw connects a TCP client to ln and wraps the accepted end as a
// mmsg.Raw, as the edge hands a TCP client's connection to a loop; both
// ends close with the test.
func dialRaw(t testing.TB, ln *net.TCPListener) (client, server *net.TCPConn, raw *mmsg.Raw) {
	t.Helper()
	client, err := net.DialTCP("tcp4", nil, ln.Addr().(*net.TCPAddr))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	server, err = ln.AcceptTCP()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { server.Close() })
	raw, err = mmsg.NewRaw(server)
	if err != nil {
		t.Fatal(err)
	}
	return client, server, raw
}

// listenTCP4 listens on a loopback TCP port read back, closed with the test.
func listenTCP4(t testing.TB) *net.TCPListener {
	t.Helper()
	ln, err := net.ListenTCP("tcp4", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln
}

// benchUplink measures up relaying one 160-byte ChannelData from client.
func benchUplink(b *testing.B, up func(pkt []byte, client netip.AddrPort) bool, client netip.AddrPort) {
	pkt := channelData(0x4001, make([]byte, 160))
	b.ReportAllocs()
	b.SetBytes(160)
	for b.Loop() {
		up(pkt, client)
	}
}

// benchDownlink measures one 160-byte datagram from peer to relayAP,
// waited for at client.
func benchDownlink(b *testing.B, peer *net.UDPConn, relayAP netip.AddrPort, client *net.UDPConn) {
	payload := make([]byte, 160)
	buf := make([]byte, 1600)
	_ = client.SetReadDeadline(time.Now().Add(time.Minute))
	b.ReportAllocs()
	b.SetBytes(int64(len(payload)))
	for b.Loop() {
		if _, err := peer.WriteToUDPAddrPort(payload, relayAP); err != nil {
			b.Fatal(err)
		}
		if _, err := client.Read(buf); err != nil {
			b.Fatal(err)
		}
	}
}
