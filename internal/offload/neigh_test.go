package offload

import (
	"bytes"
	"testing"
	"time"
)

// TestPathPeerMACChanges: the peer's interface takes a new MAC address and
// turnd's namespace forgets the old one; datagrams to the peer still
// arrive, over IPv4 and IPv6, through the kernel path (counted, nothing in
// user space), because the program leaves the link layer to the neighbour
// subsystem, which resolves the new address while the first datagram waits.
func TestPathPeerMACChanges(t *testing.T) {
	tp := newTopo(t)
	p := openPath(t, tp)
	defer p.Close()

	var sends []func(when string, n int)
	var checks []func()
	for i, fam := range families[:2] {
		r := putRelayed(t, tp, p, fam, uint16(0x4001+i))
		client, server, peer, e, slot := r.client, r.server, r.peer, r.e, r.e.Slot
		sends = append(sends, func(when string, n int) {
			t.Helper()
			data := payload(n)
			if _, err := client.WriteToUDPAddrPort(channelData(e.Channel, data, 0, 0), e.Server); err != nil {
				t.Fatal(err)
			}
			if got, from, err := recv(peer); err != nil || from != e.Relay || !bytes.Equal(got, data) {
				t.Fatalf("%s %s: peer got %d bytes from %v (%v), want %d; passed %v", fam.name, when, len(got), from, err, n, passedOf(p))
			}
		})
		checks = append(checks, func() {
			if c, err := p.Count(slot); err != nil || c.ToPeerPackets != 3 || c.ToPeerBytes != 600 {
				t.Errorf("%s: count %+v (%v), want 3 packets, 600 bytes to the peer", fam.name, c, err)
			}
			quiet(t, server)
		})
	}
	for _, send := range sends {
		send("before", 100)
	}

	const mac = "02:00:00:00:0f:01"
	nsRun(t, tp.peer, "ip", "link", "set", "p0", "address", mac)
	for _, fam := range families[:2] {
		nsRun(t, tp.turnd, "ip", "neigh", "del", fam.peer.String(), "dev", "t1")
	}
	for _, send := range sends {
		send("after the MAC change", 200)
		send("once resolved", 300)
	}
	if got := macOf(t, tp.peer, "p0"); got != mac {
		t.Fatalf("p0 has %s, want %s", got, mac)
	}
	for _, check := range checks {
		check()
	}
}

// TestPathStaleNeighbourRevalidated: turnd's namespace still holds the
// peer's old MAC, as a STALE entry, when the peer takes a new one. A route
// lookup takes a STALE entry as it is, so a program writing that MAC itself
// would send to the old address for ever; the neighbour subsystem probes a
// stale entry once it is used and finds the new address, so within a few
// probe intervals (shortened here) datagrams reach the peer again, still
// through the kernel path.
func TestPathStaleNeighbourRevalidated(t *testing.T) {
	tp := newTopo(t)
	for _, f := range []string{"ipv4", "ipv6"} {
		nsRun(t, tp.turnd, "sysctl", "-qw", "net."+f+".neigh.t1.delay_first_probe_time=0",
			"net."+f+".neigh.t1.retrans_time_ms=20", "net."+f+".neigh.t1.mcast_resolicit=3")
	}
	p := openPath(t, tp)
	defer p.Close()

	oldMAC := macOf(t, tp.peer, "p0")
	nsRun(t, tp.peer, "ip", "link", "set", "p0", "address", "02:00:00:00:0f:02")
	for i, fam := range families[:2] {
		nsRun(t, tp.turnd, "ip", "neigh", "replace", fam.peer.String(), "lladdr", oldMAC, "nud", "stale", "dev", "t1")
		r := putRelayed(t, tp, p, fam, uint16(0x4001+i))
		client, server, peer, e, slot := r.client, r.server, r.peer, r.e, r.e.Slot
		// Bounded: each datagram waits for the peer a little, and the
		// datagrams sent while the entry is probed are lost on the way.
		buf := make([]byte, 100)
		arrived := 0
		for sent := 1; sent <= 50 && arrived == 0; sent++ {
			if _, err := client.WriteToUDPAddrPort(channelData(e.Channel, payload(10), 0, 0), e.Server); err != nil {
				t.Fatal(err)
			}
			peer.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
			if n, from, err := peer.ReadFromUDPAddrPort(buf); err == nil && n == 10 && from.Port() == e.Relay.Port() {
				arrived = sent
			}
		}
		if arrived == 0 {
			t.Fatalf("%s: nothing reached the peer after 50 datagrams; passed %v", fam.name, passedOf(p))
		}
		if c, err := p.Count(slot); err != nil || c.ToPeerPackets != uint64(arrived) {
			t.Errorf("%s: count %+v (%v), want all %d datagrams relayed in the kernel", fam.name, c, err, arrived)
		}
		quiet(t, server)
		t.Logf("%s: datagram %d was the first to arrive", fam.name, arrived)
	}
}
