package relay

import (
	"net"
	"testing"
	"time"

	"github.com/turnd/turnd/internal/traffic"
)

// TestUsageCountsEachAllocationBothWays: an allocation's usage holds every
// datagram and byte it relayed, both ways, however many the shared totals
// have been published yet; the socket's close publishes the rest, and the
// route keeps the final figures for the allocation's usage record.
func TestUsageCountsEachAllocationBothWays(t *testing.T) {
	r := newFastPathRig(t)
	relayAddr := relayAddrOf(r)
	clientAP := r.client.LocalAddr().(*net.UDPAddr).AddrPort()
	relayAP := r.relay.LocalAddr().(*net.UDPAddr).AddrPort()
	const ups, downs, size = 45, 7, 100 // more than traffic.TallyBatch one way, fewer the other
	buf := make([]byte, 1600)
	for i := 0; i < ups; i++ {
		if !r.up(channelData(0x4001, make([]byte, size)), clientAP) {
			t.Fatal("bound channel not relayed")
		}
	}
	_ = r.client.SetReadDeadline(time.Now().Add(5 * time.Second))
	for i := 0; i < downs; i++ {
		if _, err := r.peer.WriteToUDPAddrPort(make([]byte, size+1), relayAP); err != nil {
			t.Fatal(err)
		}
		if _, err := r.client.Read(buf); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.gen.permitAt(relayAddr, net.IPv4(127, 0, 0, 9), false); err != nil {
		t.Fatal(err)
	}
	if err := r.gen.permitAt(relayAddr, net.IPv4(127, 0, 0, 9), false); err != nil { // a refresh
		t.Fatal(err)
	}
	want := traffic.Usage{ToPeerPackets: ups, ToPeerBytes: ups * size, FromPeerPackets: downs, FromPeerBytes: downs * (size + 1),
		Permissions: 1, Channels: 1}
	got, err := r.gen.usageAt(relayAddr)
	if err != nil || got != want {
		t.Fatalf("live usage = %+v (%v), want %+v", got, err, want)
	}
	if c := r.gen.Counters(); c.ToPeerPackets.Load() != traffic.TallyBatch {
		t.Fatalf("shared total published %d packets, want one batch of %d", c.ToPeerPackets.Load(), traffic.TallyBatch)
	}

	if err := r.relay.Close(); err != nil {
		t.Fatal(err)
	}
	if c := r.gen.Counters(); c.ToPeerPackets.Load() != ups || c.FromPeerBytes.Load() != downs*(size+1) {
		t.Fatalf("after close the shared totals are %d packets up, %d bytes down", c.ToPeerPackets.Load(), c.FromPeerBytes.Load())
	}
	if got := r.relay.route.Usage.Usage(); got != want {
		t.Fatalf("the closed route's usage = %+v, want %+v", got, want)
	}
}
