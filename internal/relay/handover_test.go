package relay

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/turnd/turnd/internal/bindings"
	"github.com/turnd/turnd/internal/mmsg"
	"github.com/turnd/turnd/internal/wire"
)

// The hand-over tests stand two Relay values in one test process for the
// old and the new turnd; the new one's lane is a duplicate of the old
// one's, as the edge's descriptors would be.

// endOfStream is the sequence number of a stream's last datagram.
const endOfStream = 1<<32 - 1

// sendSeq sends the peer's datagrams numbered from..to-1 to relay.
func sendSeq(t *testing.T, peer *net.UDPConn, relay netip.AddrPort, from, to uint32) {
	t.Helper()
	var b [8]byte
	for i := from; i < to; i++ {
		binary.BigEndian.PutUint32(b[:], i)
		if _, err := peer.WriteToUDPAddrPort(b[:], relay); err != nil {
			t.Fatal(err)
		}
	}
}

// sendEnd sends the stream's last datagram.
func sendEnd(t *testing.T, peer *net.UDPConn, relay netip.AddrPort) {
	t.Helper()
	var b [8]byte
	binary.BigEndian.PutUint32(b[:], endOfStream)
	if _, err := peer.WriteToUDPAddrPort(b[:], relay); err != nil {
		t.Fatal(err)
	}
}

// collect reads the client's ChannelData until endOfStream (at most max
// datagrams, each within a few seconds) and counts each sequence number.
func collect(c *net.UDPConn, max int) <-chan map[uint32]int {
	out := make(chan map[uint32]int, 1)
	go func() {
		seen := make(map[uint32]int)
		buf := make([]byte, 2048)
		for range max {
			_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
			n, err := c.Read(buf)
			if err != nil {
				break
			}
			_, payload, ok := wire.ParseChannelData(buf[:n])
			if !ok || len(payload) < 4 {
				seen[endOfStream-1]++ // not a relayed datagram: counted as stray
				continue
			}
			seq := binary.BigEndian.Uint32(payload)
			seen[seq]++
			if seq == endOfStream {
				break
			}
		}
		out <- seen
	}()
	return out
}

// checkOnce fails unless seen holds 0..n-1 and endOfStream, each once.
func checkOnce(t *testing.T, seen map[uint32]int, n uint32) {
	t.Helper()
	for i := uint32(0); i < n; i++ {
		if seen[i] != 1 {
			t.Errorf("datagram %d arrived %d times, want once", i, seen[i])
		}
	}
	if seen[endOfStream] != 1 || len(seen) != int(n)+1 {
		t.Errorf("%d distinct datagrams, end %d times; want %d and the end once", len(seen), seen[endOfStream], n+1)
	}
}

// epollFds lists the descriptors registered in the epoll set efd, from
// /proc/self/fdinfo: a closed descriptor whose file description lives on
// is still listed.
func epollFds(t *testing.T, efd int) []int {
	t.Helper()
	b, err := os.ReadFile("/proc/self/fdinfo/" + strconv.Itoa(efd))
	if err != nil {
		t.Fatal(err)
	}
	var fds []int
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "tfd:" {
			fd, err := strconv.Atoi(f[1])
			if err != nil {
				t.Fatalf("fdinfo line %q: %v", line, err)
			}
			fds = append(fds, fd)
		}
	}
	return fds
}

// dupLane is the new process's lane: the old one's socket, duplicated.
func dupLane(t *testing.T, lane *mmsg.Socket) *mmsg.Socket {
	t.Helper()
	f, err := lane.File()
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s, err := mmsg.FromFile(f)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func pause(t *testing.T, rl *Relay) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := rl.Pause(ctx); err != nil {
		t.Fatal(err)
	}
}

func (r *openRig) sock(i int) *Conn {
	r.rl.mu.Lock()
	defer r.rl.mu.Unlock()
	return r.rl.routes[r.route].socks[i]
}

// TestHandOverRoute: a UDP route with a permission and a channel moves
// from relay A to relay B. The peer's datagrams sent before the pause
// (some still being read), during it (queued in the kernel) and after the
// switch all reach the client once; A reads none after Pause, B the rest;
// A's loop holds no registration of the released socket; B's uplink
// sends from the same relayed address, B holds its port as live (SetRate
// finds it), and A's uplink and tables forget the route.
func TestHandOverRoute(t *testing.T) {
	const phase = 40
	a := newOpenRig(t, Options{IPv4: net.IPv4(127, 0, 0, 1)})
	relayed := a.open(t, bindings.Want{Families: bindings.V4, DontFragment: true}).Addr[0]
	a.bind()
	got := collect(a.client, 4*phase)

	sendSeq(t, a.peer4, relayed, 0, phase) // A is reading these while it pauses
	pause(t, a.rl)
	atPause := a.route.Usage.Usage().FromPeerPackets
	sendSeq(t, a.peer4, relayed, phase, 2*phase) // queued in the kernel

	files, err := a.routes.Export(a.route)
	if err != nil {
		t.Fatal(err)
	}
	if files[0] == nil || files[1] != nil {
		t.Fatalf("exported %v, want the IPv4 socket only", files)
	}
	b := New(Options{IPv4: net.IPv4(127, 0, 0, 1), MinPort: 20000, MaxPort: 40000})
	t.Cleanup(b.Close)
	laneB := dupLane(t, a.lane)
	rB := &bindings.Route{Client: bindings.Client{Tuple: a.route.Client.Tuple, Lane: laneB}}
	rB.SetPermissions(a.route.Permissions())
	rB.SetChannels(a.route.Channels())
	gotB, err := b.Routes().Adopt(rB, bindings.Want{Families: bindings.V4, DontFragment: true}, files)
	if err != nil {
		t.Fatal(err)
	}
	if err := files.Close(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Routes().Close(rB, bindings.Both) })
	if gotB.Addr[0] != relayed || gotB.Addr[1].IsValid() {
		t.Fatalf("adopted %v, want %v", gotB.Addr, relayed)
	}

	old := a.sock(0)
	efd, fd := old.loop.efd, int(old.fd)
	a.routes.Release(a.route)
	for _, f := range epollFds(t, efd) {
		if f == fd {
			t.Errorf("released relay socket (fd %d) still in A's loop's epoll set", fd)
		}
	}
	a.rl.Resume() // the old process serves what stayed

	sendSeq(t, a.peer4, relayed, 2*phase, 3*phase)
	sendEnd(t, a.peer4, relayed)
	checkOnce(t, <-got, 3*phase)
	if n := a.route.Usage.Usage().FromPeerPackets; n != atPause {
		t.Errorf("A relayed %d datagrams, %d at Pause: it read after pausing", n, atPause)
	}
	if n := rB.Usage.Usage().FromPeerPackets; atPause+n != 3*phase+1 {
		t.Errorf("B relayed %d, A %d: want %d in all", n, atPause, 3*phase+1)
	}

	// The uplink: B's from the relayed address, A's no more.
	if !b.RelayFor(laneB)(channelData(0x4000, []byte("up")), a.clientAP()) {
		t.Fatal("B's uplink did not take ChannelData on the adopted route")
	}
	if p, from := read(t, a.peer4); string(p) != "up" || from != relayed {
		t.Fatalf("peer got %q from %v, want \"up\" from %v", p, from, relayed)
	}
	if a.up(channelData(0x4000, []byte("x")), a.clientAP()) {
		t.Error("A's uplink still relays the released route")
	}
	if a.rl.liveCount() != 0 || len(a.rl.routes) != 0 {
		t.Errorf("A keeps %d live sockets, %d routes after Release", a.rl.liveCount(), len(a.rl.routes))
	}

	// B holds the port: its rate applies, and no Open takes it.
	if err := b.SetRate(net.UDPAddrFromAddrPort(relayed), 1e6); err != nil {
		t.Errorf("SetRate on the adopted relay: %v", err)
	}
	if c := b.live[liveKey{port: int(relayed.Port())}]; c == nil {
		t.Error("the adopted port is not live on B")
	} else if df, err := dontFragmentSet(c.Socket); err != nil || !df {
		t.Errorf("adopted socket: DF %v (%v)", df, err)
	}
	other := &bindings.Route{Client: rB.Client}
	other.Client.Tuple.Client = netip.AddrPortFrom(rB.Client.Tuple.Client.Addr(), rB.Client.Tuple.Client.Port()+1)
	gotO, err := b.Routes().Open(other, bindings.Want{Families: bindings.V4})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Routes().Close(other, bindings.Both)
	if gotO.Addr[0].Port() == relayed.Port() || !b.inUse(false, int(relayed.Port())) {
		t.Errorf("Open on B got %v; the adopted %v must stay in use", gotO.Addr[0], relayed)
	}
}

// TestAdoptFailureAdoptsNothing: an Adopt that cannot take a socket (a
// port already held here, an IPv6 socket passed as IPv4) leaves no route,
// live port or loop registration behind, and the files still open.
func TestAdoptFailureAdoptsNothing(t *testing.T) {
	a := newOpenRig(t, dualOptions())
	relayed := a.open(t, bindings.Want{Families: bindings.Both})
	pause(t, a.rl)
	files, err := a.routes.Export(a.route)
	if err != nil {
		t.Fatal(err)
	}
	defer files.Close()
	a.rl.Resume()

	b := New(Options{IPv4: net.IPv4(127, 0, 0, 1), IPv6: net.IPv6loopback, MinPort: 20000, MaxPort: 40000})
	t.Cleanup(b.Close)
	laneB := dupLane(t, a.lane)
	rB := &bindings.Route{Client: bindings.Client{Tuple: a.route.Client.Tuple, Lane: laneB}}
	swapped := RouteFiles{files[0], files[0]} // the IPv4 socket again as the IPv6 one
	if _, err := b.Routes().Adopt(rB, bindings.Want{Families: bindings.Both}, swapped); !errors.Is(err, ErrSocketMismatch) {
		t.Fatalf("adopt an IPv4 socket as IPv6: %v, want ErrSocketMismatch", err)
	}
	if b.liveCount() != 0 || len(b.routes) != 0 {
		t.Fatalf("a failed Adopt left %d live sockets, %d routes", b.liveCount(), len(b.routes))
	}
	for _, d := range b.loops {
		if fds := epollFds(t, d.efd); len(fds) != 0 {
			t.Fatalf("a failed Adopt left descriptors %v in a loop", fds)
		}
	}
	if _, err := b.Routes().Adopt(rB, bindings.Want{Families: bindings.Both}, files); err != nil {
		t.Fatalf("adopt with the files after a failure: %v", err)
	}
	defer b.Routes().Close(rB, bindings.Both)
	if b.liveCount() != 2 {
		t.Fatalf("%d live sockets, want 2 (%v)", b.liveCount(), relayed.Addr)
	}
	again := &bindings.Route{Client: rB.Client}
	again.Client.Tuple.Client = netip.AddrPortFrom(rB.Client.Tuple.Client.Addr(), 1)
	if _, err := b.Routes().Adopt(again, bindings.Want{Families: bindings.V4}, RouteFiles{files[0]}); !errors.Is(err, ErrPortTaken) {
		t.Fatalf("adopt a port held here: %v, want ErrPortTaken", err)
	}
}

// TestHandOverHeldPort: the port held for a reservation moves with its
// remaining time; the reservation's Open with w.Port on B gets it, and A
// no longer holds it.
func TestHandOverHeldPort(t *testing.T) {
	a := newOpenRig(t, Options{IPv4: net.IPv4(127, 0, 0, 1)})
	heldPort := a.open(t, bindings.Want{Families: bindings.V4, Reserve: true}).Held
	k := liveKey{port: heldPort}
	a.rl.mu.Lock()
	a.rl.held[k].until = time.Now().Add(5 * time.Second) // told apart from a fresh hold
	a.rl.mu.Unlock()
	if _, err := a.rl.ExportHeld(); !errors.Is(err, ErrNotPaused) {
		t.Fatalf("ExportHeld unpaused: %v, want ErrNotPaused", err)
	}
	pause(t, a.rl)
	hs, err := a.rl.ExportHeld()
	if err != nil {
		t.Fatal(err)
	}
	if len(hs) != 1 || hs[0].Port != heldPort || hs[0].V6 || hs[0].Left > 5*time.Second || hs[0].Left <= 0 {
		t.Fatalf("exported %+v, want port %d with at most 5s left", hs, heldPort)
	}
	b := New(Options{IPv4: net.IPv4(127, 0, 0, 1), MinPort: 20000, MaxPort: 40000})
	t.Cleanup(b.Close)
	if err := b.AdoptHeld(hs); err != nil {
		t.Fatal(err)
	}
	closeHeldFiles(hs)
	a.rl.ReleaseHeld()
	a.rl.Resume()
	if a.rl.inUse(false, heldPort) {
		t.Error("A still holds the reserved port")
	}
	b.mu.Lock()
	h := b.held[k]
	b.mu.Unlock()
	if h == nil || time.Until(h.until) > 5*time.Second {
		t.Fatalf("B's hold %+v: want the remaining time, at most 5s", h)
	}

	rB := &bindings.Route{Client: bindings.Client{Tuple: a.route.Client.Tuple, Lane: dupLane(t, a.lane)}}
	rB.Client.Tuple.Client = netip.AddrPortFrom(rB.Client.Tuple.Client.Addr(), rB.Client.Tuple.Client.Port()+1)
	got, err := b.Routes().Open(rB, bindings.Want{Families: bindings.V4, Port: heldPort})
	if err != nil {
		t.Fatalf("redeem the reservation on B: %v", err)
	}
	defer b.Routes().Close(rB, bindings.Both)
	if int(got.Addr[0].Port()) != heldPort {
		t.Fatalf("redeemed %v, want port %d", got.Addr[0], heldPort)
	}
}

// TestExportRefusesTCPRelays: an RFC 6062 route stays where it is: Export
// and Adopt refuse it, Release leaves it; and nothing exports unpaused.
func TestExportRefusesTCPRelays(t *testing.T) {
	rl := tcpTestRelay(t, 4, Options{})
	r, relayed := openTCP(t, rl)
	if _, err := rl.Routes().Export(r); !errors.Is(err, ErrNotPaused) {
		t.Fatalf("export unpaused: %v, want ErrNotPaused", err)
	}
	pause(t, rl)
	defer rl.Resume()
	if _, err := rl.Routes().Export(r); !errors.Is(err, ErrNotMovable) {
		t.Fatalf("export an RFC 6062 route: %v, want ErrNotMovable", err)
	}
	if _, err := rl.Routes().Adopt(&bindings.Route{Client: r.Client}, bindings.Want{Families: bindings.V4, TCP: true},
		RouteFiles{}); !errors.Is(err, ErrNotMovable) {
		t.Fatalf("adopt an RFC 6062 route: %v, want ErrNotMovable", err)
	}
	rl.Routes().Release(r)
	rl.mu.Lock()
	kept := rl.routes[r] != nil
	rl.mu.Unlock()
	if !kept || rl.routeAt(relayed) != r {
		t.Fatal("Release dropped an RFC 6062 route")
	}
}

// TestAdoptForAStreamClient: a TCP client's route is adopted with its
// connection in the new process: the peer's datagrams go down that
// connection, and its frames up through RelayStreamFor.
func TestAdoptForAStreamClient(t *testing.T) {
	a := newOpenRig(t, Options{IPv4: net.IPv4(127, 0, 0, 1)})
	relayed := a.open(t, bindings.Want{Families: bindings.V4}).Addr[0]
	a.bind()
	pause(t, a.rl)
	files, err := a.routes.Export(a.route)
	if err != nil {
		t.Fatal(err)
	}
	defer files.Close()

	ln := listenTCP4(t)
	clientEnd, err := net.DialTCP("tcp4", nil, ln.Addr().(*net.TCPAddr))
	if err != nil {
		t.Fatal(err)
	}
	defer clientEnd.Close()
	serverEnd, err := ln.AcceptTCP()
	if err != nil {
		t.Fatal(err)
	}
	defer serverEnd.Close()
	b := New(Options{IPv4: net.IPv4(127, 0, 0, 1), MinPort: 20000, MaxPort: 40000})
	t.Cleanup(b.Close)
	rB := &bindings.Route{Client: bindings.Client{Stream: newWriterStream(serverEnd)}}
	rB.Client.Tuple.Client = udpAP(a.client) // the 5-tuple the edge keys the stream by
	rB.Client.Tuple.Server = serverEnd.LocalAddr().(*net.TCPAddr).AddrPort()
	rB.Client.Tuple.TCP = true
	rB.SetPermissions(a.route.Permissions())
	rB.SetChannels(a.route.Channels())
	if _, err := b.Routes().Adopt(rB, bindings.Want{Families: bindings.V4}, files); err != nil {
		t.Fatal(err)
	}
	defer b.Routes().Close(rB, bindings.Both)
	a.routes.Release(a.route)
	a.rl.Resume()

	if _, err := a.peer4.WriteToUDPAddrPort([]byte("s"), relayed); err != nil {
		t.Fatal(err)
	}
	frame := make([]byte, 8) // ChannelData of 1 byte, padded on a stream
	_ = clientEnd.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.ReadFull(clientEnd, frame); err != nil {
		t.Fatal(err)
	}
	if num, p, ok := wire.ParseChannelData(frame[:5]); !ok || num != 0x4000 || string(p) != "s" {
		t.Fatalf("stream got %x", frame)
	}
	if !b.RelayStreamFor(serverEnd.LocalAddr())(channelData(0x4000, []byte("up")), rB.Client.Tuple.Client) {
		t.Fatal("B's stream uplink did not take ChannelData")
	}
	if p, from := read(t, a.peer4); string(p) != "up" || from != relayed {
		t.Fatalf("peer got %q from %v", p, from)
	}
}
