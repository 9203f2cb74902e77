package relay

import (
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/pion/stun/v4"

	"github.com/turnd/turnd/internal/bindings"
	"github.com/turnd/turnd/internal/mmsg"
	"github.com/turnd/turnd/internal/netaddr"
	"github.com/turnd/turnd/internal/traffic"
)

func listenLoopback(t *testing.T, network, ip string) *net.UDPConn {
	t.Helper()
	c, err := net.ListenUDP(network, &net.UDPAddr{IP: net.ParseIP(ip)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// listenLane is a client-facing socket as the server makes one.
func listenLane(t *testing.T, network, ip string) *mmsg.Socket {
	t.Helper()
	s, err := mmsg.Adopt(listenLoopback(t, network, ip))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestDownlinkManySocketsAndLanes: the loops serve many relay sockets at
// once, each answering through its own lane, IPv4 and IPv6, and every
// datagram reaches its own client as ChannelData with the right number.
func TestDownlinkManySocketsAndLanes(t *testing.T) {
	g := New(Options{IPv4: net.IPv4(127, 0, 0, 1), IPv6: net.IPv6loopback, MinPort: 20000, MaxPort: 40000})
	t.Cleanup(g.Close)
	type alloc struct {
		relay  net.Addr
		client *net.UDPConn
		peer   *net.UDPConn
		number uint16
	}
	var allocs []alloc
	for _, fam := range []struct{ network, ip string }{{"udp4", "127.0.0.1"}, {"udp6", "::1"}} {
		lanes := []*mmsg.Socket{listenLane(t, fam.network, fam.ip), listenLane(t, fam.network, fam.ip)}
		for i := 0; i < 12; i++ {
			a := alloc{client: listenLoopback(t, fam.network, fam.ip),
				peer: listenLoopback(t, fam.network, fam.ip), number: 0x4000 + uint16(len(allocs))}
			pc, relayAddr := g.openUDPAt(t, fam.network, lanes[i%2], a.client.LocalAddr(), lanes[i%2].LocalAddr(), nil)
			a.relay = pc.LocalAddr()
			if err := g.bindAt(relayAddr, a.peer.LocalAddr(), a.number, false); err != nil {
				t.Fatal(err)
			}
			allocs = append(allocs, a)
		}
	}
	const rounds = 20
	for r := 0; r < rounds; r++ {
		for _, a := range allocs {
			if _, err := a.peer.WriteTo([]byte(fmt.Sprintf("%04x/%d", a.number, r)), a.relay); err != nil {
				t.Fatal(err)
			}
		}
	}
	buf := make([]byte, 64)
	for _, a := range allocs {
		_ = a.client.SetReadDeadline(time.Now().Add(5 * time.Second))
		for r := 0; r < rounds; r++ {
			n, err := a.client.Read(buf)
			if err != nil {
				t.Fatalf("client of channel %#x: datagram %d: %v", a.number, r, err)
			}
			if want := string(channelData(a.number, []byte(fmt.Sprintf("%04x/%d", a.number, r)))); string(buf[:n]) != want {
				t.Fatalf("client of channel %#x got %q, want %q", a.number, buf[:n], want)
			}
		}
	}
}

// TestDownlinkForgetsClosedSockets: once a relay socket closes its loop
// never reads it again, even when the next socket reuses its descriptor.
func TestDownlinkForgetsClosedSockets(t *testing.T) {
	g := New(Options{IPv4: net.IPv4(127, 0, 0, 1), MinPort: 20000, MaxPort: 40000})
	t.Cleanup(g.Close)
	lane := listenLane(t, "udp4", "127.0.0.1")
	peer := listenLoopback(t, "udp4", "127.0.0.1")
	open := func(client *net.UDPConn) *Conn {
		c, relayAddr := g.openUDPAt(t, "udp4", lane, client.LocalAddr(), lane.LocalAddr(), nil)
		if err := g.bindAt(relayAddr, peer.LocalAddr(), 0x4001, false); err != nil {
			t.Fatal(err)
		}
		return c
	}
	first, second := listenLoopback(t, "udp4", "127.0.0.1"), listenLoopback(t, "udp4", "127.0.0.1")
	old := open(first)
	oldFD := old.fd
	if err := old.Close(); err != nil {
		t.Fatal(err)
	}
	if g.liveCount() != 0 {
		t.Fatalf("%d relays live after Close", g.liveCount())
	}
	fresh := open(second)
	if _, err := peer.WriteTo([]byte("fresh"), fresh.LocalAddr()); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	_ = second.SetReadDeadline(time.Now().Add(5 * time.Second))
	if n, err := second.Read(buf); err != nil || string(buf[:n]) != string(channelData(0x4001, []byte("fresh"))) {
		t.Fatalf("new client got %q (%v); descriptor %d reused: %v", buf[:n], err, oldFD, oldFD == fresh.fd)
	}
	_ = first.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
	if n, err := first.Read(buf); err == nil {
		t.Fatalf("the closed allocation's client got %q", buf[:n])
	}
}

// TestRelayCloseEndsLoops: the loops are goroutines of the relay's
// and end with it.
func TestRelayCloseEndsLoops(t *testing.T) {
	before := runtime.NumGoroutine()
	g := New(Options{IPv4: net.IPv4(127, 0, 0, 1), MinPort: 20000, MaxPort: 40000})
	lane := listenLane(t, "udp4", "127.0.0.1")
	client := listenLoopback(t, "udp4", "127.0.0.1")
	pc, _ := g.openUDPAt(t, "udp4", lane, client.LocalAddr(), lane.LocalAddr(), nil)
	if want := downlinkLoops(runtime.GOMAXPROCS(0)); len(g.loops) != want {
		t.Fatalf("%d downlink loops for %d CPUs, want %d", len(g.loops), runtime.GOMAXPROCS(0), want)
	}
	pc.Close()
	g.Close()
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines after Close, %d before", runtime.NumGoroutine(), before)
		}
		runtime.Gosched()
	}
	r := &bindings.Route{Client: bindings.Client{Tuple: netaddr.Of(client.LocalAddr(), lane.LocalAddr()), Lane: lane}}
	if _, err := g.Routes().Open(r, bindings.Want{Families: bindings.V4}); err == nil {
		t.Fatal("a closed relay opened a relay for a UDP client")
	}
}

// BenchmarkDownlinkChannelData is one datagram from a peer through a
// downlink loop to its client as ChannelData, waited for at the client.
// allocs/op counts every goroutine's allocations, the loop's included.
func BenchmarkDownlinkChannelData(b *testing.B) { benchDownlinkChannelData(b, 0) }

// benchDownlinkChannelData relays peer datagrams to the client under a rate
// of bps each way (0: unlimited).
func benchDownlinkChannelData(b *testing.B, bps int64) {
	r := newFastPathRig(b)
	if err := r.gen.SetRate(relayAddrOf(r), bps); err != nil {
		b.Fatal(err)
	}
	benchDownlink(b, r.peer, r.relay.LocalAddr().(*net.UDPAddr).AddrPort(), r.client)
}

// TestDownlinkStreamClient: a plain TCP client's downlink runs in a loop
// too, framed for a stream (ChannelData padded to 4 bytes, RFC 8656 §12.5),
// written whole through the connection's try-writer.
func TestDownlinkStreamClient(t *testing.T) {
	g, ln := newStreamRig(t)
	sc := newStreamClient(t, g, ln)
	client, pc, peer, relayAddr := sc.conn, sc.relay, sc.peer, sc.relay.LocalAddr()
	if pc.(*Conn).loop == nil {
		t.Fatal("a TCP client's relay is not served by a downlink loop")
	}
	for _, m := range []string{"abc", "defgh"} {
		if _, err := peer.WriteTo([]byte(m), pc.LocalAddr()); err != nil {
			t.Fatal(err)
		}
	}
	want := append(channelData(0x4001, []byte("abc\x00")), channelData(0x4001, []byte("defgh\x00\x00\x00"))...)
	binary.BigEndian.PutUint16(want[2:], 3) // the length field counts the payload, not the padding
	binary.BigEndian.PutUint16(want[10:], 5)
	got := make([]byte, len(want))
	_ = client.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.ReadFull(client, got); err != nil || string(got) != string(want) {
		t.Fatalf("client read % x (%v), want % x", got, err, want)
	}

	// A peer with a permission but no channel: a Data indication, whose
	// STUN length keeps the stream framed (padded, a multiple of 4).
	other := listenLoopback(t, "udp4", "127.0.0.2")
	if err := g.permitAt(relayAddr, net.IPv4(127, 0, 0, 2), false); err != nil {
		t.Fatal(err)
	}
	if _, err := other.WriteTo([]byte("odd"), pc.LocalAddr()); err != nil {
		t.Fatal(err)
	}
	head := make([]byte, 20)
	if _, err := io.ReadFull(client, head); err != nil {
		t.Fatal(err)
	}
	body := make([]byte, binary.BigEndian.Uint16(head[2:]))
	if _, err := io.ReadFull(client, body); err != nil {
		t.Fatal(err)
	}
	msg := &stun.Message{Raw: append(head, body...)}
	err := msg.Decode()
	data, _ := msg.Get(stun.AttrData)
	if err != nil || msg.Type != stun.NewType(stun.MethodData, stun.ClassIndication) ||
		len(msg.Raw)%4 != 0 || string(data) != "odd" {
		t.Fatalf("client read % x (%v), want a padded Data indication carrying \"odd\"", msg.Raw, err)
	}
}

// newStreamRig returns a relay and a TCP listener for stream clients.
func newStreamRig(t *testing.T) (*Relay, *net.TCPListener) {
	t.Helper()
	g := New(Options{IPv4: net.IPv4(127, 0, 0, 1), MinPort: 20000, MaxPort: 40000})
	t.Cleanup(g.Close)
	ln, err := net.ListenTCP("tcp4", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return g, ln
}

// streamClient is a plain TCP client of a loop-served allocation, as the
// server wires one: the server side of the connection wrapped in mmsg.Raw.
type streamClient struct {
	conn      *net.TCPConn // the client's end
	stream    *mmsg.Raw    // the server's end
	relay     net.PacketConn
	relayAddr net.Addr
	peer      *net.UDPConn
}

func newStreamClient(t *testing.T, g *Relay, ln *net.TCPListener) streamClient {
	t.Helper()
	client, err := net.DialTCP("tcp4", nil, ln.Addr().(*net.TCPAddr))
	if err != nil {
		t.Fatal(err)
	}
	server, err := ln.AcceptTCP()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close(); server.Close() })
	stream, err := mmsg.NewRaw(server)
	if err != nil {
		t.Fatal(err)
	}
	pc, relayAddr := g.openUDPAt(t, "udp4", nil, server.RemoteAddr(), server.LocalAddr(), newWriterStream(stream))
	peer := listenLoopback(t, "udp4", "127.0.0.1")
	if err := g.bindAt(relayAddr, peer.LocalAddr(), 0x4001, false); err != nil {
		t.Fatal(err)
	}
	return streamClient{conn: client, stream: stream, relay: pc, relayAddr: relayAddr, peer: peer}
}

// TestDownlinkSlowStreamClientStallsNobody: a TCP client that stops reading
// fills its connection; its loop drops what does not fit (and counts it)
// instead of waiting, so another client of the same loop is still served.
func TestDownlinkSlowStreamClientStallsNobody(t *testing.T) {
	g, ln := newStreamRig(t)
	slow := newStreamClient(t, g, ln)
	_ = slow.conn.SetReadBuffer(4096) // never read below: its buffers fill fast
	// Every allocation of this relay shares one loop when there is one
	// per two CPUs; with more, the slow client still must not stall its own.
	payload := make([]byte, 1200)
	for i := 0; g.Counters().DroppedToClient[traffic.ClientBusy].Packets.Load() == 0; i++ {
		if i == 100000 {
			t.Fatal("no drop after 100 000 datagrams to a client that never reads")
		}
		if _, err := slow.peer.WriteTo(payload, slow.relay.LocalAddr()); err != nil {
			t.Fatal(err)
		}
	}
	fast := newStreamClient(t, g, ln)
	if _, err := fast.peer.WriteTo([]byte("hi"), fast.relay.LocalAddr()); err != nil {
		t.Fatal(err)
	}
	want := channelData(0x4001, []byte("hi\x00\x00"))
	binary.BigEndian.PutUint16(want[2:], 2)
	got := make([]byte, len(want))
	_ = fast.conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.ReadFull(fast.conn, got); err != nil || string(got) != string(want) {
		t.Fatalf("the other client read % x (%v), want % x", got, err, want)
	}
}

// TestDownlinkBacklog: a relay socket that holds many datagrams at once is
// drained completely and in order — first read one at a time, then in
// batches while it stays ready pass after pass (see readSocket).
func TestDownlinkBacklog(t *testing.T) {
	r := newFastPathRig(t)
	const count = 200
	for i := 0; i < count; i++ {
		if _, err := r.peer.WriteTo([]byte(strconv.Itoa(i)), r.relay.LocalAddr()); err != nil {
			t.Fatal(err)
		}
	}
	buf := make([]byte, 64)
	for i := 0; i < count; i++ {
		_ = r.client.SetReadDeadline(time.Now().Add(2 * time.Second))
		n, err := r.client.Read(buf)
		if err != nil {
			t.Fatalf("datagram %d: %v", i, err)
		}
		if want := channelData(0x4001, []byte(strconv.Itoa(i))); string(buf[:n]) != string(want) {
			t.Fatalf("datagram %d: got %x, want %x", i, buf[:n], want)
		}
	}
}
