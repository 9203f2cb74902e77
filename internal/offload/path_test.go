package offload

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// topo is the client, turnd and peer namespaces joined by veth pairs:
//
//	client c0 198.18.1.2, 2001:db8:1::2 -- t0 198.18.1.1, 2001:db8:1::1 turnd
//	peer   p0 198.18.2.2, 2001:db8:2::2 -- t1 198.18.2.1, 2001:db8:2::1 turnd
//
// with static neighbours in turnd's namespace, so no datagram of the
// checksum matrix waits for resolution (the neighbour tests change them).
// Forwarding stays off on t0 and t1 (newNS turns
// it on for lo only): the kernel path must not need a host that routes.
type topo struct {
	client, turnd, peer string
}

func newTopo(t *testing.T) topo {
	t.Helper()
	requireRoot(t)
	if _, err := exec.LookPath("ethtool"); err != nil {
		t.Skip("needs ethtool")
	}
	tp := topo{client: newNS(t), turnd: newNS(t), peer: newNS(t)}
	nsRun(t, tp.turnd, "ip", "link", "add", "t0", "type", "veth", "peer", "name", "c0", "netns", tp.client)
	nsRun(t, tp.turnd, "ip", "link", "add", "t1", "type", "veth", "peer", "name", "p0", "netns", tp.peer)
	side := func(ns, dev, v4, v6, gw4, gw6 string) {
		nsRun(t, ns, "ip", "addr", "add", v4, "dev", dev)
		nsRun(t, ns, "ip", "addr", "add", v6, "dev", dev, "nodad")
		nsRun(t, ns, "ip", "link", "set", dev, "mtu", "9500", "up")
		if gw4 != "" {
			nsRun(t, ns, "ip", "route", "add", "default", "via", gw4)
			nsRun(t, ns, "ip", "-6", "route", "add", "default", "via", gw6)
		}
	}
	side(tp.client, "c0", "198.18.1.2/24", "2001:db8:1::2/64", "198.18.1.1", "2001:db8:1::1")
	side(tp.peer, "p0", "198.18.2.2/24", "2001:db8:2::2/64", "198.18.2.1", "2001:db8:2::1")
	side(tp.turnd, "t0", "198.18.1.1/24", "2001:db8:1::1/64", "", "")
	side(tp.turnd, "t1", "198.18.2.1/24", "2001:db8:2::1/64", "", "")
	// Both ways, so no datagram waits for ARP or ND (a first IPv6 one could
	// wait past a read deadline while the fresh links settle).
	for _, n := range []struct{ ns, dev, tdev, v4, v6, tv4, tv6 string }{
		{tp.client, "c0", "t0", "198.18.1.2", "2001:db8:1::2", "198.18.1.1", "2001:db8:1::1"},
		{tp.peer, "p0", "t1", "198.18.2.2", "2001:db8:2::2", "198.18.2.1", "2001:db8:2::1"},
	} {
		mac, tmac := macOf(t, n.ns, n.dev), macOf(t, tp.turnd, n.tdev)
		for _, a := range []string{n.v4, n.v6} {
			nsRun(t, tp.turnd, "ip", "neigh", "replace", a, "lladdr", mac, "nud", "permanent", "dev", n.tdev)
		}
		for _, a := range []string{n.tv4, n.tv6} {
			nsRun(t, n.ns, "ip", "neigh", "replace", a, "lladdr", tmac, "nud", "permanent", "dev", n.dev)
		}
	}
	return tp
}

// openPath opens a Path with the default options in turnd's namespace.
func openPath(t *testing.T, tp topo) *Path {
	t.Helper()
	var p *Path
	if err := inNS(tp.turnd, func() error {
		var err error
		p, err = Open(Options{})
		return err
	}); err != nil {
		t.Fatalf("open: %v", err)
	}
	return p
}

// relayed is one entry's four sockets, each in its namespace, and the
// entry that joins them.
type relayed struct {
	client, server, relay, peer *net.UDPConn
	e                           Entry
}

// putRelayed binds the four sockets of fam on free ports and installs
// their entry on channel ch, in a new slot.
func putRelayed(t *testing.T, tp topo, p *Path, fam family, ch uint16) relayed {
	t.Helper()
	r := relayed{
		client: listen(t, tp.client, netip.AddrPortFrom(fam.client, 0)),
		server: listen(t, tp.turnd, netip.AddrPortFrom(fam.server, 0)),
		relay:  listen(t, tp.turnd, netip.AddrPortFrom(fam.relay, 0)),
		peer:   listen(t, tp.peer, netip.AddrPortFrom(fam.peer, 0)),
	}
	slot, err := p.NewSlot()
	if err != nil {
		t.Fatal(err)
	}
	r.e = Entry{Client: local(r.client), Server: local(r.server), Relay: local(r.relay), Peer: local(r.peer), Channel: ch, Slot: slot}
	if err := p.Put(r.e); err != nil {
		t.Fatal(err)
	}
	return r
}

func macOf(t *testing.T, ns, dev string) string {
	t.Helper()
	var mac string
	if err := inNS(ns, func() error {
		ifc, err := net.InterfaceByName(dev)
		if err == nil {
			mac = ifc.HardwareAddr.String()
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return mac
}

// listen binds a UDP socket in namespace ns; it stays there when used from
// any goroutine.
func listen(t *testing.T, ns string, ap netip.AddrPort) *net.UDPConn {
	t.Helper()
	var c *net.UDPConn
	if err := inNS(ns, func() error {
		var err error
		c, err = net.ListenUDP("udp", net.UDPAddrFromAddrPort(ap))
		return err
	}); err != nil {
		t.Fatalf("listen %v in %s: %v", ap, ns, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func local(c *net.UDPConn) netip.AddrPort {
	ap := c.LocalAddr().(*net.UDPAddr).AddrPort()
	return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
}

// recv reads one datagram within a second.
func recv(c *net.UDPConn) ([]byte, netip.AddrPort, error) {
	buf := make([]byte, 10000)
	c.SetReadDeadline(time.Now().Add(time.Second))
	n, from, err := c.ReadFromUDPAddrPort(buf)
	return buf[:n], netip.AddrPortFrom(from.Addr().Unmap(), from.Port()), err
}

// quiet wants nothing waiting on c: user space must not see relayed traffic.
func quiet(t *testing.T, c *net.UDPConn) {
	t.Helper()
	buf := make([]byte, 2048)
	c.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
	if n, from, err := c.ReadFromUDPAddrPort(buf); err == nil {
		t.Errorf("%v got %d bytes from %v in user space", local(c), n, from)
	}
}

// csumErrors is Udp and Udp6 InCsumErrors in namespace ns.
func csumErrors(t *testing.T, ns string) uint64 {
	t.Helper()
	var total uint64
	err := inNS(ns, func() error {
		b, err := os.ReadFile("/proc/thread-self/net/snmp")
		if err != nil {
			return err
		}
		var head []string
		for _, line := range strings.Split(string(b), "\n") {
			f := strings.Fields(line)
			if len(f) == 0 || f[0] != "Udp:" {
				continue
			}
			if head == nil {
				head = f
				continue
			}
			if i := slices.Index(head, "InCsumErrors"); i > 0 {
				n, _ := strconv.ParseUint(f[i], 10, 64)
				total += n
			}
		}
		f, err := os.Open("/proc/thread-self/net/snmp6")
		if err != nil {
			return err
		}
		defer f.Close()
		s := bufio.NewScanner(f)
		for s.Scan() {
			if f := strings.Fields(s.Text()); len(f) == 2 && f[0] == "Udp6InCsumErrors" {
				n, _ := strconv.ParseUint(f[1], 10, 64)
				total += n
			}
		}
		return s.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	return total
}

func ethtoolTX(t *testing.T, ns, dev string, on bool) {
	t.Helper()
	v := "off"
	if on {
		v = "on"
	}
	nsRun(t, ns, "ethtool", "-K", dev, "tx", v)
}

// family is one way an allocation relays: the client's family and the
// peer's.
type family struct {
	name                        string
	client, server, relay, peer netip.Addr
}

var families = []family{
	{"v4", client4.Addr(), server4.Addr(), relay4.Addr(), peer4.Addr()},
	{"v6", client6.Addr(), server6.Addr(), relay6.Addr(), peer6.Addr()},
	{"v4 client v6 peer", client4.Addr(), server4.Addr(), relay6.Addr(), peer6.Addr()},
	{"v6 client v4 peer", client6.Addr(), server6.Addr(), relay4.Addr(), peer4.Addr()},
}

// sizes are the payloads sent each way: empty, odd, near a common MTU, and
// jumbo (the veths' MTU is 9500), which takes every chunk of the move.
var sizes = []int{0, 1, 99, 1001, 1400, 9000}

// tooLarge is beyond what the program moves (MAX_PAYLOAD in bpf/maps.h).
const tooLarge = 9217

// TestPathRelays sends ChannelData through the namespaces with the program
// on t0 and t1, for each family pairing and each combination of checksum
// offload on the sender's veth (on: the skb arrives CHECKSUM_PARTIAL) and on
// the egress veth (off: the kernel computes the checksum from csum_start
// before handing it over), and wants every datagram delivered with exactly
// its bytes, counted, and no checksum error at the receivers. Then it
// deletes the entry and wants the next datagrams in user space, unchanged.
func TestPathRelays(t *testing.T) {
	tp := newTopo(t)
	p := openPath(t, tp)
	defer p.Close()
	if got := p.Interfaces(); !slices.Equal(got, []string{"t0", "t1"}) {
		t.Errorf("attached to %v, want [t0 t1]", got)
	}

	ch := uint16(0x4000)
	for _, fam := range families {
		for _, senderTX := range []bool{true, false} {
			for _, egressTX := range []bool{true, false} {
				ch++
				name := fmt.Sprintf("%s/sender tx %v/egress tx %v", fam.name, senderTX, egressTX)
				t.Run(name, func(t *testing.T) {
					ethtoolTX(t, tp.client, "c0", senderTX)
					ethtoolTX(t, tp.peer, "p0", senderTX)
					ethtoolTX(t, tp.turnd, "t0", egressTX)
					ethtoolTX(t, tp.turnd, "t1", egressTX)
					relayPath(t, tp, p, fam, ch)
				})
			}
		}
	}
}

func relayPath(t *testing.T, tp topo, p *Path, fam family, ch uint16) {
	r := putRelayed(t, tp, p, fam, ch)
	defer p.FreeSlot(r.e.Slot)
	client, server, relay, peer, e, slot := r.client, r.server, r.relay, r.peer, r.e, r.e.Slot
	errsClient, errsPeer := csumErrors(t, tp.client), csumErrors(t, tp.peer)

	var want Count
	for _, n := range sizes {
		data := payload(n)
		if _, err := client.WriteToUDPAddrPort(channelData(ch, data, 0, 0), e.Server); err != nil {
			t.Fatal(err)
		}
		got, from, err := recv(peer)
		if err != nil || from != e.Relay || !bytes.Equal(got, data) {
			t.Fatalf("peer got %d bytes from %v (%v), want %d from %v; passed %v", len(got), from, err, n, e.Relay, passedOf(p))
		}
		want.ToPeerPackets++
		want.ToPeerBytes += uint64(n)

		if _, err := peer.WriteToUDPAddrPort(data, e.Relay); err != nil {
			t.Fatal(err)
		}
		got, from, err = recv(client)
		if err != nil || from != e.Server || !bytes.Equal(got, channelData(ch, data, 0, 0)) {
			t.Fatalf("client got %d bytes from %v (%v), want %d from %v; passed %v", len(got), from, err, n+4, e.Server, passedOf(p))
		}
		want.ToClientPackets++
		want.ToClientBytes += uint64(n)
	}
	if got, err := p.Count(slot); err != nil || got != want {
		t.Errorf("count %+v (%v), want %+v", got, err, want)
	}
	quiet(t, server)
	quiet(t, relay)
	if c, p := csumErrors(t, tp.client), csumErrors(t, tp.peer); c != errsClient || p != errsPeer {
		t.Errorf("UDP checksum errors: client %d -> %d, peer %d -> %d", errsClient, c, errsPeer, p)
	}

	// A frame too large to move in the kernel goes up as it came.
	big := channelData(ch, payload(tooLarge), 0, 0)
	if _, err := client.WriteToUDPAddrPort(big, e.Server); err != nil {
		t.Fatal(err)
	}
	if got, _, err := recv(server); err != nil || !bytes.Equal(got, big) {
		t.Errorf("server socket got %d bytes (%v), want the %d-byte frame", len(got), err, len(big))
	}

	// After Delete the same datagrams reach the user-space sockets as sent.
	if err := p.Delete(e); err != nil {
		t.Fatal(err)
	}
	frame := channelData(ch, payload(33), 0, 0)
	if _, err := client.WriteToUDPAddrPort(frame, e.Server); err != nil {
		t.Fatal(err)
	}
	if got, from, err := recv(server); err != nil || from != e.Client || !bytes.Equal(got, frame) {
		t.Errorf("after delete the server socket got %x from %v (%v), want %x from %v", got, from, err, frame, e.Client)
	}
	if _, err := peer.WriteToUDPAddrPort(payload(33), e.Relay); err != nil {
		t.Fatal(err)
	}
	if got, from, err := recv(relay); err != nil || from != e.Peer || !bytes.Equal(got, payload(33)) {
		t.Errorf("after delete the relay socket got %x from %v (%v), want the peer's datagram", got, from, err)
	}
	if got, err := p.Count(slot); err != nil || got != want {
		t.Errorf("count after delete %+v (%v), want %+v", got, err, want)
	}
	if err := p.Delete(e); err != nil {
		t.Errorf("second delete: %v", err)
	}
}

func passedOf(p *Path) map[string]uint64 {
	m, err := p.Passed()
	if err != nil {
		return map[string]uint64{"error": 0}
	}
	for k, v := range m {
		if v == 0 {
			delete(m, k)
		}
	}
	return m
}

// TestPathsChain: a second Path on the same interfaces (a hand-over's
// successor) relays what the first one has no entry for, and goes on
// when the first is closed: the program hands what it leaves alone to the
// next one (TCX_NEXT), not straight up the stack.
func TestPathsChain(t *testing.T) {
	tp := newTopo(t)
	first := openPath(t, tp)
	second := openPath(t, tp)
	defer second.Close()
	defer first.Close()
	relayPath(t, tp, second, families[0], 0x4001)
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	relayPath(t, tp, second, families[1], 0x4002)
}
