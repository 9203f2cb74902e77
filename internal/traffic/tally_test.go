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
