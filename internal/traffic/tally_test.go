package traffic_test

import (
	"testing"

	"github.com/turnd/turnd/internal/traffic"
)

// TestFlowPublishesEachDatagramOnce: a writer and a flush racing to
// publish never count a datagram twice or lose one.
func TestFlowPublishesEachDatagramOnce(t *testing.T) {
	var c traffic.Counters
	var tl traffic.Tally
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; i < 10000; i++ {
			tl.ToPeer(&c, 3)
		}
	}()
	for i := 0; i < 1000; i++ {
		tl.Flush(&c)
	}
	<-done
	tl.Flush(&c)
	if c.ToPeerPackets.Load() != 10000 || c.ToPeerBytes.Load() != 30000 {
		t.Fatalf("published %d packets, %d bytes; want 10000, 30000", c.ToPeerPackets.Load(), c.ToPeerBytes.Load())
	}
}

// TestTallyOfBothFamilies: an allocation with an IPv4 and an IPv6 relay
// counts each family's headers at its own size, and its usage is both.
func TestTallyOfBothFamilies(t *testing.T) {
	var c traffic.Counters
	tl := traffic.Tally{Header: 28, Header6: 48}
	tl.ToPeer(&c, 10)
	tl.ToPeer6(&c, 20)
	tl.FromPeer(&c, 2, 30)
	tl.FromPeer6(&c, 1, 40)
	tl.Flush(&c)
	if h := c.HeaderBytes.Load(); h != 3*28+2*48 {
		t.Errorf("header bytes %d, want %d", h, 3*28+2*48)
	}
	u := tl.Usage()
	if u.ToPeerPackets != 2 || u.ToPeerBytes != 30 || u.FromPeerPackets != 3 || u.FromPeerBytes != 70 {
		t.Errorf("usage %+v", u)
	}
	if c.ToPeerBytes.Load() != 30 || c.FromPeerPackets.Load() != 3 {
		t.Errorf("published %d bytes to peers, %d packets from", c.ToPeerBytes.Load(), c.FromPeerPackets.Load())
	}
}

// TestKernelCountsAsRelayed: what the kernel path relayed is in the
// allocation's usage, the shared totals with their header bytes, and the
// kernel's own totals, each family on its own flow.
func TestKernelCountsAsRelayed(t *testing.T) {
	var c traffic.Counters
	tl := traffic.Tally{Header: 28, Header6: 48}
	tl.ToPeer(&c, 10)
	tl.Kernel(&c, false, 3, 300, 2, 200)
	tl.Kernel(&c, true, 1, 100, 0, 0)
	// Published at once, fewer than TallyBatch as they are: a Settle
	// leaves the totals exact.
	if c.ToPeerPackets.Load() != 5 || c.FromPeerPackets.Load() != 2 {
		t.Fatalf("before a flush, totals %d to peers, %d back; want 5, 2", c.ToPeerPackets.Load(), c.FromPeerPackets.Load())
	}
	tl.Flush(&c)
	u := tl.Usage()
	if u.ToPeerPackets != 5 || u.ToPeerBytes != 410 || u.FromPeerPackets != 2 || u.FromPeerBytes != 200 {
		t.Fatalf("usage %+v; want 5 packets/410 bytes to the peer, 2/200 back", u)
	}
	if c.ToPeerPackets.Load() != 5 || c.FromPeerBytes.Load() != 200 || c.HeaderBytes.Load() != 6*28+48 {
		t.Fatalf("totals: %d packets to peers, %d bytes back, %d header bytes; want 5, 200, %d",
			c.ToPeerPackets.Load(), c.FromPeerBytes.Load(), c.HeaderBytes.Load(), 6*28+48)
	}
	k := &c.Kernel
	if k.ToPeerPackets.Load() != 4 || k.ToPeerBytes.Load() != 400 || k.ToClientPackets.Load() != 2 || k.ToClientBytes.Load() != 200 {
		t.Fatalf("kernel totals %d/%d to peers, %d/%d to clients; want 4/400, 2/200",
			k.ToPeerPackets.Load(), k.ToPeerBytes.Load(), k.ToClientPackets.Load(), k.ToClientBytes.Load())
	}
}

// TestSettleRunsTheFold: Settle runs what SetSettle gave it, and nothing
// before that.
func TestSettleRunsTheFold(t *testing.T) {
	var c traffic.Counters
	c.Settle()
	n := 0
	c.SetSettle(func() { n++ })
	c.Settle()
	if n != 1 {
		t.Fatalf("fold ran %d times; want 1", n)
	}
}
