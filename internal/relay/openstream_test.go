package relay

import (
	"bytes"
	"encoding/binary"
	"io"
	"net"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/turnd/turnd/internal/bindings"
	"github.com/turnd/turnd/internal/mmsg"
	"github.com/turnd/turnd/internal/traffic"
)

// Opened routes of stream clients: the downlink loops serve TLS streams as
// they serve plain TCP ones.

// busyStream is a TLS client's stream whose connection never has room:
// TryWritev refuses every batch and reports it; Write would block, which
// the downlink must never call.
type busyStream struct {
	tries   chan int
	wrote   chan struct{}
	once    sync.Once
	release chan struct{} // closed as the test ends
}

func (s *busyStream) Write(b []byte) (int, error) {
	s.once.Do(func() { close(s.wrote) })
	<-s.release // a TLS write to a client that does not read, until the test ends
	return len(b), nil
}

func (s *busyStream) TryWritev(frames [][]byte) bool {
	s.tries <- len(frames)
	return false
}

func (s *busyStream) Idle(bool)                    {}
func (s *busyStream) Pipe(peer io.ReadWriteCloser) {}
func (s *busyStream) Close() error                 { return nil }

// TestTLSDownlinkNeverWaits: a TLS client's downlink goes through the
// loop's TryWritev like a plain TCP client's: a busy connection drops the
// datagram, counted as client_busy, and the loop goes on serving others.
func TestTLSDownlinkNeverWaits(t *testing.T) {
	r := newOpenRig(t, dualOptions())
	r.open(t, bindings.Want{Families: bindings.V4})
	r.bind()
	s := &busyStream{tries: make(chan int, 16), wrote: make(chan struct{}), release: make(chan struct{})}
	tls := &bindings.Route{Client: bindings.Client{TLS: true, Stream: s}}
	tls.Client.Tuple = r.route.Client.Tuple
	tls.Client.Tuple.TCP = true
	tlsGot, err := r.routes.Open(tls, bindings.Want{Families: bindings.V4})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.routes.Close(tls, bindings.Both) })
	t.Cleanup(func() { close(s.release) }) // first: a planted Write must not hold the loop past the test
	tls.SetPermissions([]netip.Addr{udpAP(r.peer4).Addr()})
	tls.SetChannels([]bindings.Channel{{Number: 0x4000, Peer: udpAP(r.peer4)}})

	const n = 5
	for i := 0; i < n; i++ {
		if _, err := r.peer4.WriteToUDPAddrPort([]byte("busy"), tlsGot.Addr[0]); err != nil {
			t.Fatal(err)
		}
		select {
		case <-s.tries:
		case <-s.wrote:
			t.Fatal("the downlink called Write on a TLS stream: it may wait")
		case <-time.After(5 * time.Second):
			t.Fatal("the downlink never tried the TLS stream")
		}
		// The same loop serves the UDP client meanwhile.
		if _, err := r.peer4.WriteToUDPAddrPort([]byte("udp"), r.udpRelayed(t)); err != nil {
			t.Fatal(err)
		}
		if b, _ := read(t, r.client); !bytes.Equal(b, channelData(0x4000, []byte("udp"))) {
			t.Fatalf("the UDP client got % x", b)
		}
	}
	busy := r.rl.Counters().DroppedToClient[traffic.ClientBusy].Packets.Load()
	if busy != n {
		t.Fatalf("client_busy counted %d, want %d", busy, n)
	}
	if u := tls.Usage.Usage(); u.FromPeerPackets != 0 {
		t.Fatalf("TLS route counted %d datagrams relayed that were dropped", u.FromPeerPackets)
	}
}

// rawStream is a plain TCP client's connection as the edge would hand it
// over: written through mmsg.Raw, which never waits in TryWritev.
type rawStream struct{ *mmsg.Raw }

func (rawStream) Idle(bool)               {}
func (rawStream) Pipe(io.ReadWriteCloser) {}
func (rawStream) Close() error            { return nil }

// TestRouteStreamRoundTrip: an opened route of a plain TCP client relays
// its ChannelData frames up, found by the connection's local address as
// RelayStreamFor keys them, and writes the peer's answers to the stream
// padded to 4 bytes (RFC 8656 §12.5).
func TestRouteStreamRoundTrip(t *testing.T) {
	r := newOpenRig(t, dualOptions())
	client, server, raw := dialRaw(t, listenTCP4(t))
	route := &bindings.Route{Client: bindings.Client{Stream: rawStream{raw}}}
	route.Client.Tuple.Client = server.RemoteAddr().(*net.TCPAddr).AddrPort()
	route.Client.Tuple.Server = server.LocalAddr().(*net.TCPAddr).AddrPort()
	route.Client.Tuple.TCP = true
	got, err := r.routes.Open(route, bindings.Want{Families: bindings.V4})
	if err != nil {
		t.Fatal(err)
	}
	defer r.routes.Close(route, bindings.Both)
	route.SetPermissions([]netip.Addr{udpAP(r.peer4).Addr()})
	route.SetChannels([]bindings.Channel{{Number: 0x4000, Peer: udpAP(r.peer4)}})

	up := r.rl.RelayStreamFor(server.LocalAddr())
	if !up(channelData(0x4000, []byte("ping")), route.Client.Tuple.Client) {
		t.Fatal("the stream's ChannelData not relayed")
	}
	if b, from := read(t, r.peer4); string(b) != "ping" || from != got.Addr[0] {
		t.Fatalf("peer got %q from %v", b, from)
	}
	if _, err := r.peer4.WriteToUDPAddrPort([]byte("abc"), got.Addr[0]); err != nil {
		t.Fatal(err)
	}
	want := channelData(0x4000, []byte("abc\x00"))
	binary.BigEndian.PutUint16(want[2:], 3) // the length counts the payload, not the padding
	b := make([]byte, len(want))
	_ = client.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.ReadFull(client, b); err != nil || !bytes.Equal(b, want) {
		t.Fatalf("client read % x (%v), want % x", b, err, want)
	}
}

// TestReadyMayCallTheRelayInline: a TCP client's connection read by the
// loop of its allocation may be answered inline, and the handler may then
// open an allocation or close the very one whose socket this loop serves
// (a Refresh with lifetime 0): neither waits for the loop's own lock.
func TestReadyMayCallTheRelayInline(t *testing.T) {
	r := newOpenRig(t, dualOptions())
	r.open(t, bindings.Want{Families: bindings.V4})
	r.rl.mu.Lock()
	loop := Loop{d: r.rl.routes[r.route].socks[0].loop}
	r.rl.mu.Unlock()
	client, _, raw := dialRaw(t, listenTCP4(t))
	other := &bindings.Route{Client: r.route.Client}
	other.Client.Tuple.Client = netip.AddrPortFrom(other.Client.Tuple.Client.Addr(), other.Client.Tuple.Client.Port()+1)
	defer r.routes.Close(other, bindings.Both)
	done := make(chan string, 4)
	ready := func() bool {
		buf := make([]byte, 16)
		n, err := raw.TryRead(buf)
		if err != nil || n == 0 {
			return err == nil
		}
		switch string(buf[:n]) {
		case "open":
			if _, err := r.routes.Open(other, bindings.Want{Families: bindings.V4}); err != nil {
				done <- err.Error()
				return true
			}
		case "close":
			r.routes.Close(r.route, bindings.Both)
		}
		done <- string(buf[:n])
		return true
	}
	if err := loop.Watch(raw.Fd(), ready, func() {}); err != nil {
		t.Fatal(err)
	}
	defer loop.Unwatch(raw.Fd())
	for _, req := range []string{"open", "close"} {
		if _, err := client.Write([]byte(req)); err != nil {
			t.Fatal(err)
		}
		select {
		case got := <-done:
			if got != req {
				t.Fatalf("%s inline: %s", req, got)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s inline never returned: the loop waits for itself", req)
		}
	}
	if r.rl.liveCount() != 1 {
		t.Fatalf("%d live sockets, want the other route's only", r.rl.liveCount())
	}
}
