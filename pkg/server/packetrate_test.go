package server_test

import (
	"testing"
	"time"

	"github.com/turnd/turnd/internal/testturn"
)

// TestTinyDatagramsPayTheirHeaders: with limits.max_bps at 64 kbit/s, a
// client sending empty ChannelData and a peer sending 1-byte datagrams, 4000
// a second each for 1.5 s, get what 64 kbit/s carries once each datagram
// is charged its 28 bytes of IPv4 and UDP header as well: about 290 a second
// each way, not all 6000 (900 kbit/s on the wire).
func TestTinyDatagramsPayTheirHeaders(t *testing.T) {
	const (
		rate     = 64_000 // bit/s
		perTick  = 40     // datagrams per 10 ms each way: 4000/s
		duration = 1500 * time.Millisecond
		header   = 28 // IPv4 and UDP
	)
	opts := testOptions()
	opts.Config.Limits.MaxBPS = rate
	s := start(t, opts)
	c := dial(t, s, "udp")
	relayed := c.MustAllocate()
	peer := listenPeer(t, "127.0.0.1")
	if code := testturn.ErrorCode(c.ChannelBind(0x4001, peer.addr())); code != 0 {
		t.Fatalf("ChannelBind: error %d", code)
	}

	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	sent, start := 0, time.Now()
	for time.Since(start) < duration {
		<-tick.C
		for range perTick {
			c.SendChannel(0x4001, nil)
			if _, err := peer.WriteToUDP([]byte{1}, relayed); err != nil {
				t.Fatal(err)
			}
			sent++
		}
	}
	elapsed := time.Since(start)
	u := s.Usage(s.Sessions("demo")[0])
	// What the rate lets through in the time, plus its 100 ms burst.
	window := (elapsed + 100*time.Millisecond).Seconds()
	for _, d := range []struct {
		what    string
		got     uint64
		payload int
	}{{"to the peer", u.ToPeerPackets, 0}, {"from the peer", u.FromPeerPackets, 1}} {
		want := float64(rate) / 8 / float64(d.payload+header) * window
		t.Logf("%s: %d of %d datagrams relayed, want about %.0f", d.what, d.got, sent, want)
		if f := float64(d.got); f > 1.15*want || f < 0.8*want {
			t.Errorf("%s: %d of %d datagrams relayed in %v, want %.0f within 15 %%", d.what, d.got, sent, elapsed, want)
		}
	}
}
