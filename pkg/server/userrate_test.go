package server_test

import (
	"net"
	"testing"
	"time"

	"github.com/turnd/turnd/internal/testturn"
	"github.com/turnd/turnd/internal/traffic"
	"github.com/turnd/turnd/pkg/allocation"
	"github.com/turnd/turnd/pkg/server"
)

// TestUserTotalBPSHoldsAUsersAllocationsTogether: with
// limits.user_total_bps at 400 kbit/s and no max_bps, three allocations of
// demo offered 100 kB/s each way for two seconds relay 400 kbit/s together
// each way (no more than 10 % over, payload being 1000/1028 of what is
// charged; the lower bound is loose for a loaded machine), while
// bob, unlimited through user_total_bps_overrides, relays all he is
// offered. A reload lifting demo's limit applies to the live allocations.
func TestUserTotalBPSHoldsAUsersAllocationsTogether(t *testing.T) {
	const (
		rate     = 400_000 // bit/s
		size     = 1000
		duration = 2 * time.Second
	)
	opts := testOptions()
	opts.Config.Auth.Users["bob"] = "bob"
	opts.Config.Limits.UserTotalBPS = rate
	opts.Config.Limits.UserTotalBPSOverrides = map[string]int64{"bob": 0}
	s := start(t, opts)

	type flow struct {
		client *testturn.Client
		relay  *net.UDPAddr
		peer   rawPeer
	}
	var flows []flow
	for _, user := range []string{"demo", "demo", "demo", "bob"} {
		c := dialAs(t, s, "udp", user, user)
		f := flow{client: c, relay: c.MustAllocate(), peer: listenPeer(t, "127.0.0.1")}
		mustPermit(t, c, f.peer.addr())
		flows = append(flows, f)
	}

	payload := make([]byte, size)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	sent, start := 0, time.Now()
	for time.Since(start) < duration {
		<-tick.C
		for _, f := range flows {
			f.client.Send(f.peer.addr(), payload)
			if _, err := f.peer.WriteToUDP(payload, f.relay); err != nil {
				t.Fatal(err)
			}
		}
		sent++
	}
	elapsed := time.Since(start)
	// Charged per datagram: payload and 28 bytes of headers; 100 ms of burst.
	want := float64(rate) / 8 * (elapsed + 100*time.Millisecond).Seconds() * size / (size + 28)
	offered := float64(sent * size)
	var demoTo, demoFrom uint64
	for _, sess := range s.Sessions("") {
		u := s.Usage(sess)
		t.Logf("%s: %d bytes to the peer, %d from it, %d dropped for the rate (offered %.0f each way)",
			sess.User, u.ToPeerBytes, u.FromPeerBytes, u.RateLimited, offered)
		if sess.User == "bob" {
			if float64(u.ToPeerBytes) < 0.9*offered || float64(u.FromPeerBytes) < 0.9*offered {
				t.Errorf("unlimited bob relayed %d and %d of %.0f bytes offered", u.ToPeerBytes, u.FromPeerBytes, offered)
			}
			continue
		}
		demoTo += u.ToPeerBytes
		demoFrom += u.FromPeerBytes
	}
	// The bound is the rate, tight; below it a loaded machine's stalls
	// only leave offered datagrams unsent, so that bound is loose.
	for dir, got := range map[string]uint64{"to peers": demoTo, "from peers": demoFrom} {
		if f := float64(got); f < 0.6*want || f > 1.1*want {
			t.Errorf("demo's allocations together relayed %d bytes %s in %v, want between 0.6 and 1.1 × %.0f", got, dir, elapsed, want)
		}
	}

	next := s.Config()
	next.Limits.UserTotalBPSOverrides = map[string]int64{"demo": 0}
	if _, err := s.Reload(next); err != nil {
		t.Fatal(err)
	}
	wantAllPass(t, s, flows[0].client, flows[0].peer, "demo", 50, payload)
}

// wantAllPass sends n datagrams at once from c to peer, far past any rate's
// burst, and checks that every one arrives and none is dropped for a rate.
func wantAllPass(t *testing.T, s *server.Server, c *testturn.Client, peer rawPeer, user string, n int, payload []byte) {
	t.Helper()
	rateLimited := func() (dropped uint64) {
		for _, sess := range s.Sessions(user) {
			dropped += s.Usage(sess).RateLimited
		}
		return dropped
	}
	before := rateLimited()
	for range n {
		c.Send(peer.addr(), payload)
	}
	for got := 0; got < n; got++ {
		if peer.next(waitTimeout) == nil {
			t.Fatalf("after the reload, datagram %d of %d did not arrive", got+1, n)
		}
	}
	if after := rateLimited(); after != before {
		t.Fatalf("%d datagrams dropped for the rate after the reload lifted it", after-before)
	}
}

// TestUserTotalBPSPacesRFC6062Relays: limits.user_total_bps holds two RFC
// 6062 relays of one user to the rate together, each way, no more than
// 10 % over it in two seconds (their reads and writes wait, as with
// max_bps); the lower bound is loose for a loaded machine.
func TestUserTotalBPSPacesRFC6062Relays(t *testing.T) {
	const (
		rate   = 400_000 // bit/s: 50 kB/s
		window = 2 * time.Second
	)
	opts := testOptions()
	opts.Config.Limits.UserTotalBPS = rate
	s := start(t, opts)
	pipes := []tcpPipe{openTCPPipe(t, s, "demo"), openTCPPipe(t, s, "demo")}
	toPeers, fromPeers := make(chan int, 2), make(chan int, 2)
	for _, p := range pipes {
		go offerMB(p.data.Conn())
		go offerMB(p.peer)
		go countFor(p.peer, window, toPeers)
		go countFor(p.data.Conn(), window, fromPeers)
	}
	want := float64(rate) / 8 * (window + 100*time.Millisecond).Seconds()
	for dir, results := range map[string]chan int{"to the peers": toPeers, "from the peers": fromPeers} {
		got := <-results + <-results
		t.Logf("%s: %d bytes in %v, want about %.0f", dir, got, window, want)
		if f := float64(got); f < 0.6*want || f > 1.1*want {
			t.Errorf("%s: %d bytes read in %v, want between 0.6 and 1.1 × %.0f", dir, got, window, want)
		}
	}
}

// TestUserTotalBPSLeavesUDPAShareBesideRFC6062: under user_total_bps, an
// RFC 6062 relay copying as fast as it may does not starve a UDP relay of
// the same user: offered 40 % of the rate each way, the UDP relay passes
// at least a third of it, as a stream waits for room before it charges
// the user's bucket.
func TestUserTotalBPSLeavesUDPAShareBesideRFC6062(t *testing.T) {
	const (
		rate   = 400_000 // bit/s: 50 kB/s
		size   = 500 - 28
		every  = 25 * time.Millisecond // 20 kB/s on the wire each way
		window = 2 * time.Second
	)
	opts := testOptions()
	opts.Config.Limits.UserTotalBPS = rate
	s := start(t, opts)
	pipe := openTCPPipe(t, s, "demo")
	c := dial(t, s, "udp")
	relayAddr, peer := c.MustAllocate(), listenPeer(t, "127.0.0.1")
	mustPermit(t, c, peer.addr())

	flood := func(w net.Conn) {
		buf := make([]byte, 16*1024)
		for {
			if _, err := w.Write(buf); err != nil {
				return
			}
		}
	}
	drain := func(r net.Conn) {
		buf := make([]byte, 64*1024)
		for {
			if _, err := r.Read(buf); err != nil {
				return
			}
		}
	}
	go flood(pipe.data.Conn())
	go flood(pipe.peer)
	go drain(pipe.peer)
	go drain(pipe.data.Conn())
	t.Cleanup(func() { pipe.peer.Close(); pipe.data.Conn().Close() })

	udpUsage := func() (u traffic.Usage) {
		for _, sess := range s.Sessions("demo") {
			if sess.Relay.String() == relayAddr.String() {
				return s.Usage(sess)
			}
		}
		t.Fatal("the UDP allocation is gone")
		return u
	}
	// Both streams flowing, the bucket is as full as they may keep it.
	var stream allocation.Info
	for _, sess := range s.Sessions("demo") {
		if sess.Relay.String() != relayAddr.String() {
			stream = sess
		}
	}
	if u := awaitUsage(t, s, stream, func(u traffic.Usage) bool { return u.ToPeerBytes > rate/8/10 && u.FromPeerBytes > rate/8/10 }); u.ToPeerBytes == 0 || u.FromPeerBytes == 0 {
		t.Fatalf("the RFC 6062 relay does not flow: %+v", u)
	}
	before := udpUsage()
	payload := make([]byte, size)
	tick := time.NewTicker(every)
	defer tick.Stop()
	sent := 0
	for start := time.Now(); time.Since(start) < window; sent++ {
		<-tick.C
		c.Send(peer.addr(), payload)
		if _, err := peer.WriteToUDP(payload, relayAddr); err != nil {
			t.Fatal(err)
		}
	}
	after := udpUsage()
	to, from := after.ToPeerPackets-before.ToPeerPackets, after.FromPeerPackets-before.FromPeerPackets
	t.Logf("UDP relayed %d to the peer and %d from it of %d offered each way; %d dropped for the rate",
		to, from, sent, after.RateLimited-before.RateLimited)
	if min(to, from) < uint64(sent)/3 {
		t.Fatalf("UDP relayed %d to the peer and %d from it of %d offered each way beside a saturating RFC 6062 relay, want at least a third", to, from, sent)
	}
}
