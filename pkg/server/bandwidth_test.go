package server_test

import (
	"net"
	"testing"
	"time"

	"github.com/turnd/turnd/internal/testturn"
)

// TestMaxBPSHoldsAnAllocationToItsRate: with limits.max_bps at 400 kbit/s
// (50 kB/s), an allocation offered four times that each way for three
// seconds relays its rate, within 10 %, each way; bob, unlimited through
// user_max_bps, relays everything he is offered on the same server. That
// traffic is past limits.total_bps, so a new Allocate gets 486; a reload
// lifting both limits applies to the live allocation and to new ones.
func TestMaxBPSHoldsAnAllocationToItsRate(t *testing.T) {
	const (
		rate     = 400_000 // bit/s
		size     = 1000    // bytes per datagram
		perTick  = 2       // datagrams per 10 ms each way: 200 kB/s offered
		duration = 3 * time.Second
	)
	opts := testOptions()
	opts.Config.Auth.Users["bob"] = "bob"
	opts.Config.Limits.MaxBPS = rate
	opts.Config.Limits.UserMaxBPS = map[string]int64{"bob": 0}
	opts.Config.Limits.TotalBPS = 1_000_000
	s := start(t, opts)

	type flow struct {
		client *testturn.Client
		relay  *net.UDPAddr
		peer   *net.UDPConn
	}
	open := func(user string) flow {
		peer, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { peer.Close() })
		c := dialAs(t, s, "udp", user, user)
		if user == "demo" {
			c = dial(t, s, "udp")
		}
		f := flow{client: c, relay: c.MustAllocate(), peer: peer}
		mustPermit(t, c, peer.LocalAddr().(*net.UDPAddr))
		return f
	}
	limited, free := open("demo"), open("bob")

	payload := make([]byte, size)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	sent, start := 0, time.Now()
	for end := time.Now().Add(duration); time.Now().Before(end); {
		<-tick.C
		for i := 0; i < perTick; i++ {
			for _, f := range []flow{limited, free} {
				f.client.Send(f.peer.LocalAddr().(*net.UDPAddr), payload)      // up
				if _, err := f.peer.WriteToUDP(payload, f.relay); err != nil { // down
					t.Fatal(err)
				}
			}
			sent++
		}
	}
	elapsed := time.Since(start)
	want := float64(rate) / 8 * elapsed.Seconds()
	for _, sess := range s.Sessions("") {
		u := s.Usage(sess)
		offered := float64(sent * size)
		for dir, got := range map[string]uint64{"to peer": u.ToPeerBytes, "from peer": u.FromPeerBytes} {
			switch {
			case sess.User == "demo" && (float64(got) > 1.1*want || float64(got) < 0.9*want):
				t.Errorf("limited %s: relayed %d bytes in %v, want %.0f within 10 %% (offered %.0f)", dir, got, elapsed, want, offered)
			case sess.User == "bob" && float64(got) < 0.9*offered:
				t.Errorf("unlimited %s: relayed %d of %.0f bytes offered", dir, got, offered)
			}
		}
		if sess.User == "demo" && u.RateLimited == 0 {
			t.Error("no drop counted for the limited allocation")
		}
		t.Logf("%s: %d bytes to peers, %d from peers, %d datagrams dropped for the rate", sess.User, u.ToPeerBytes, u.FromPeerBytes, u.RateLimited)
	}

	if code := testturn.ErrorCode(dial(t, s, "udp").Allocate()); code != 486 {
		t.Fatalf("Allocate past limits.total_bps: %d, want 486", code)
	}

	next := s.Config()
	next.Limits.MaxBPS, next.Limits.TotalBPS = 0, 0
	if _, err := s.Reload(next); err != nil {
		t.Fatal(err)
	}
	before := s.Usage(s.Sessions("demo")[0])
	sink := open("demo").peer // a fresh peer: every datagram it reads is from below
	mustPermit(t, limited.client, sink.LocalAddr().(*net.UDPAddr))
	for i := 0; i < 50; i++ { // at once: far past the old rate's 100 ms burst
		limited.client.Send(sink.LocalAddr().(*net.UDPAddr), payload)
	}
	_ = sink.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 2*size)
	for got := 0; got < 50; got++ {
		if _, err := sink.Read(buf); err != nil {
			t.Fatalf("after the reload, datagram %d of 50: %v", got+1, err)
		}
	}
	after := s.Usage(s.Sessions("demo")[0])
	if after.RateLimited != before.RateLimited {
		t.Fatalf("%d datagrams dropped for the rate after the reload lifted it", after.RateLimited-before.RateLimited)
	}
	if code := testturn.ErrorCode(dial(t, s, "udp").Allocate()); code != 0 {
		t.Fatalf("Allocate after the reload lifted total_bps: error %d", code)
	}
}
