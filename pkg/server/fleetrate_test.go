package server_test

import (
	"net"
	"testing"
	"time"

	"github.com/turnd/turnd/internal/testturn"
	"github.com/turnd/turnd/pkg/server"
)

// fleetFlow is one allocation with its peer.
type fleetFlow struct {
	client *testturn.Client
	relay  *net.UDPAddr
	peer   rawPeer
}

// TestFleetSharesUserTotalBPS: with other nodes relaying 600 kbit/s of
// demo's 800 kbit/s limit, this node holds demo's two allocations, offered
// 100 kB/s each way each, to the 200 kbit/s left (no more than 10 % over;
// the lower bound is loose for a loaded machine), and publishes the rate
// it measured for demo, not for the unlimited bob. A sample that finds the
// others gone gives demo the whole limit back.
func TestFleetSharesUserTotalBPS(t *testing.T) {
	const (
		limit    = 800_000 // bit/s
		others   = 600_000
		size     = 1000
		duration = 2 * time.Second
	)
	opts := testOptions()
	opts.Config.Auth.Users["bob"] = "bob"
	opts.Config.Limits.UserTotalBPS = limit
	opts.Config.Limits.UserTotalBPSOverrides = map[string]int64{"bob": 0}
	s := start(t, opts)
	f := server.NewFakeFleetRates(map[string]uint64{"demo": others})
	s.SetFleetRates(f)

	var flows []fleetFlow
	for _, user := range []string{"demo", "demo", "bob"} {
		c := dialAs(t, s, "udp", user, user)
		fl := fleetFlow{client: c, relay: c.MustAllocate(), peer: listenPeer(t, "127.0.0.1")}
		mustPermit(t, c, fl.peer.addr())
		flows = append(flows, fl)
	}
	s.SampleFleetRates(time.Now()) // the baseline
	payload := make([]byte, size)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	start := time.Now()
	for time.Since(start) < duration {
		<-tick.C
		for _, fl := range flows[:2] {
			fl.client.Send(fl.peer.addr(), payload)
			if _, err := fl.peer.WriteToUDP(payload, fl.relay); err != nil {
				t.Fatal(err)
			}
		}
	}
	elapsed := time.Since(start)
	s.SampleFleetRates(time.Now())

	allowance := float64(limit - others)
	want := allowance / 8 * (elapsed + 100*time.Millisecond).Seconds() * size / (size + 28)
	var to, from uint64
	for _, sess := range s.Sessions("demo") {
		u := s.Usage(sess)
		to += u.ToPeerBytes
		from += u.FromPeerBytes
	}
	for dir, got := range map[string]uint64{"to peers": to, "from peers": from} {
		if g := float64(got); g < 0.6*want || g > 1.1*want {
			t.Errorf("demo relayed %d bytes %s in %v, want between 0.6 and 1.1 × %.0f (her share %v bit/s)",
				got, dir, elapsed, want, allowance)
		}
	}
	pub := f.Last()
	t.Logf("demo relayed %d bytes to peers, %d from them in %v; published %v", to, from, elapsed, pub)
	if _, ok := pub["bob"]; ok || len(pub) != 1 {
		t.Errorf("published %v, want demo's rate alone (bob is unlimited)", pub)
	}
	// Measured from the sample before the traffic: a little under the share.
	if got := float64(pub["demo"]); got < 0.5*allowance || got > 1.15*allowance {
		t.Errorf("published demo at %.0f bit/s, want about her share %.0f", got, allowance)
	}

	f.SetOthers(nil)
	s.SampleFleetRates(time.Now())
	// Eight datagrams at once fit the whole limit's 100 ms burst, not the
	// share's (three of them).
	fl := flows[0]
	_ = fl.peer.pending() // what the flood left
	for range 8 {
		fl.client.Send(fl.peer.addr(), payload)
	}
	for got := 0; got < 8; got++ {
		if fl.peer.next(waitTimeout) == nil {
			t.Fatalf("with the others gone, datagram %d of 8 did not arrive: demo still held to her share", got+1)
		}
	}
}
