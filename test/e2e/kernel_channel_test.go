package e2e

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"syscall"
	"testing"
	"time"

	"github.com/pion/stun/v4"

	"github.com/turnd/turnd/internal/netaddr"
	"github.com/turnd/turnd/internal/testturn"
)

// kernelPeer is a UDP socket in the peer namespace that keeps every
// datagram it receives, so a test can say what reached the peer and from
// where.
type kernelPeer struct {
	conn *net.UDPConn
	got  chan datagram
}

// datagram is one datagram a kernelPeer received.
type datagram struct {
	from    netip.AddrPort
	payload string
}

// listenPeer opens a kernelPeer on host (an address of p0) and a port the
// kernel picks.
func (k *kernelNet) listenPeer(t *testing.T, host string) *kernelPeer {
	t.Helper()
	var conn *net.UDPConn
	if err := k.peer.do(func() (err error) {
		conn, err = net.ListenUDP("udp", &net.UDPAddr{IP: net.ParseIP(host)})
		return err
	}); err != nil {
		t.Fatalf("listen on %s in %s: %v", host, k.peer, err)
	}
	p := &kernelPeer{conn: conn, got: make(chan datagram, 4096)}
	closing, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		buf := make([]byte, 2048)
		for {
			n, from, err := conn.ReadFromUDPAddrPort(buf)
			if err != nil {
				return // closed at cleanup
			}
			select {
			case p.got <- datagram{from: from, payload: string(buf[:n])}:
			case <-closing: // a test that left more unread than got holds
				return
			}
		}
	}()
	t.Cleanup(func() { close(closing); conn.Close(); <-stopped })
	return p
}

// addr is the peer's address as the client names it.
func (p *kernelPeer) addr() *net.UDPAddr { return p.conn.LocalAddr().(*net.UDPAddr) }

// next waits for the next datagram, at most timeout (none: what has arrived).
func (p *kernelPeer) next(timeout time.Duration) (datagram, bool) {
	select { // first what has arrived: a timer already due would win half the time
	case d := <-p.got:
		return d, true
	default:
	}
	select {
	case d := <-p.got:
		return d, true
	case <-time.After(timeout):
		return datagram{}, false
	}
}

// send sends payload to to from the peer.
func (p *kernelPeer) send(t *testing.T, to *net.UDPAddr, payload string) {
	t.Helper()
	if _, err := p.conn.WriteToUDP([]byte(payload), to); err != nil {
		t.Fatalf("peer send to %v: %v", to, err)
	}
}

// kernelChannel is one allocation of a Go TURN client in the client
// namespace with one channel bound to a kernelPeer.
type kernelChannel struct {
	c      *testturn.Client
	relay  *net.UDPAddr
	peer   *kernelPeer
	number uint16
}

// family6 is REQUESTED-ADDRESS-FAMILY IPv6.
var family6 = testturn.RawAttr(stun.AttrRequestedAddressFamily, []byte{0x02, 0, 0, 0})

// openChannel allocates from client (an address of c0) at server, with
// extra Allocate attributes, and binds channel 0x4000 to peer.
func (k *kernelNet) openChannel(t *testing.T, client, server string, peer *kernelPeer, extra ...stun.Setter) *kernelChannel {
	t.Helper()
	c := k.client.dialFrom(t, "udp", client, server)
	resp := c.Allocate(extra...)
	if code := testturn.ErrorCode(resp); code != 0 {
		t.Fatalf("Allocate from %s to %s: error %d", client, server, code)
	}
	ch := &kernelChannel{c: c, relay: testturn.Relayed(t, resp), peer: peer, number: 0x4000}
	if code := testturn.ErrorCode(c.ChannelBind(ch.number, peer.addr())); code != 0 {
		t.Fatalf("ChannelBind to %v: error %d", peer.addr(), code)
	}
	return ch
}

// relayBoth sends payloads as ChannelData to the peer, one after another
// with no wait, and the peer sends each back to the relay address: every
// one must arrive unchanged, at the peer from the relay address and at the
// client as ChannelData on the channel.
func (ch *kernelChannel) relayBoth(t *testing.T, payloads []string) {
	t.Helper()
	for _, p := range payloads {
		ch.c.SendChannel(ch.number, []byte(p))
	}
	for i, want := range payloads {
		d, ok := ch.peer.next(5 * time.Second)
		if !ok {
			t.Fatalf("%d/%d datagrams sent on channel %#x reached the peer", i, len(payloads), ch.number)
		}
		if d.payload != want || netaddr.Unmap(d.from) != netaddr.Unmap(ch.relay.AddrPort()) {
			t.Fatalf("the peer got %d bytes from %v, want %d bytes from the relay %v (datagram %d)",
				len(d.payload), d.from, len(want), ch.relay, i)
		}
	}
	for _, p := range payloads {
		ch.peer.send(t, ch.relay, p)
	}
	for i, want := range payloads {
		f, err := ch.c.ReadFrame(5 * time.Second)
		if err != nil {
			t.Fatalf("%d/%d datagrams the peer sent reached the client: %v", i, len(payloads), err)
		}
		if len(f) < 4 || binary.BigEndian.Uint16(f) != ch.number || string(f[4:]) != want {
			t.Fatalf("the client got %d bytes, want ChannelData on %#x with %d bytes (datagram %d)", len(f), ch.number, len(want), i)
		}
	}
}

// throughKernel is relayBoth, and requires the kernel path to have counted
// at least half of the datagrams each way (a channel's first datagrams may
// take user space); where it counted all of a direction, its bytes must be
// the payloads' exactly.
func (ch *kernelChannel) throughKernel(t *testing.T, srv *kernelServer, payloads []string) {
	t.Helper()
	before := srv.kernel(t)
	ch.relayBoth(t, payloads)
	after := srv.kernel(t)
	n, size := float64(len(payloads)), 0.0
	for _, p := range payloads {
		size += float64(len(p))
	}
	toPeer, toClient := after.toPeer-before.toPeer, after.toClient-before.toClient
	if toPeer < n/2 || toClient < n/2 || toPeer > n || toClient > n {
		t.Fatalf("the kernel path counted %v to the peer and %v to the client of %v datagrams each way, want at least half",
			toPeer, toClient, n)
	}
	if b := after.toPeerBytes - before.toPeerBytes; toPeer == n && b != size {
		t.Errorf("the kernel path relayed all %v datagrams to the peer and counted %v bytes, want %v", n, b, size)
	}
	if b := after.toClientBytes - before.toClientBytes; toClient == n && b != size {
		t.Errorf("the kernel path relayed all %v datagrams to the client and counted %v bytes, want %v", n, b, size)
	}
}

// requireStopped sends n datagrams each way on a channel that must no
// longer be relayed by the kernel: the kernel counters stay where they
// are, nothing reaches the peer, and the client gets no ChannelData
// (userSpaceData: it may get the peer's datagrams as Data indications).
// Absence has no event to wait for: quiet bounds the wait. srv nil: turnd
// has exited, and only what arrives is checked.
func (ch *kernelChannel) requireStopped(t *testing.T, srv *kernelServer, n int, userSpaceData bool) {
	t.Helper()
	const quiet = 500 * time.Millisecond
	var before kernelCount
	if srv != nil {
		before = srv.kernel(t)
	}
	for i := range n {
		ch.sendRefusable(t, fmt.Sprintf("after-%d", i))
		ch.peer.send(t, ch.relay, fmt.Sprintf("back-%d", i))
	}
	channelData, indications := 0, 0
	deadline := time.Now().Add(quiet)
	for time.Now().Before(deadline) {
		f, err := ch.c.ReadFrame(time.Until(deadline))
		if err != nil {
			break
		}
		if len(f) >= 4 && f[0]&0xC0 == 0x40 {
			channelData++
		} else {
			indications++
		}
	}
	reached := 0
	for {
		if _, ok := ch.peer.next(time.Until(deadline)); !ok {
			break
		}
		reached++
	}
	if reached > 0 || channelData > 0 || (!userSpaceData && indications > 0) {
		t.Errorf("after the event: %d/%d datagrams reached the peer, the client got %d ChannelData and %d other messages of %d",
			reached, n, channelData, indications, n)
	}
	if srv == nil {
		return
	}
	if after := srv.kernel(t); after != before {
		t.Errorf("after the event the kernel path relayed %v to the peer and %v to the client, want none",
			after.toPeer-before.toPeer, after.toClient-before.toClient)
	}
}

// sendRefusable sends payload as ChannelData on the channel; a write
// refused (an ICMP error came back: nothing listens where turnd did) is no
// failure here.
func (ch *kernelChannel) sendRefusable(t *testing.T, payload string) {
	t.Helper()
	frame := binary.BigEndian.AppendUint16(nil, ch.number)
	frame = binary.BigEndian.AppendUint16(frame, uint16(len(payload)))
	if _, err := ch.c.Conn().Write(append(frame, payload...)); err != nil && !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("send on channel %#x: %v", ch.number, err)
	}
}

// drainClient reads and drops what reaches the client until nothing has
// for quiet.
func (ch *kernelChannel) drainClient(quiet time.Duration) {
	for i := 0; i < 1000; i++ {
		if _, err := ch.c.ReadFrame(quiet); err != nil {
			return
		}
	}
}

// payloads are n datagrams, each tagged, of lengths cycling through ones
// that need ChannelData padding over streams (UDP sends none) up to a
// 1200-byte media packet; the shortest are as long as the tag.
func payloads(tag string, n int) []string {
	sizes := []int{1, 3, 4, 100, 161, 1200}
	out := make([]string, n)
	for i := range out {
		p := []byte(fmt.Sprintf("%s-%d-", tag, i))
		for len(p) < sizes[i%len(sizes)] {
			p = append(p, byte('a'+len(p)%26))
		}
		out[i] = string(p)
	}
	return out
}
