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
