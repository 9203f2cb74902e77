package server_test

import (
	"bytes"
	"crypto/tls"
	"testing"
	"time"

	"github.com/pion/stun/v4"

	"github.com/turnd/turnd/internal/testturn"
	"github.com/turnd/turnd/internal/traffic"
	"github.com/turnd/turnd/pkg/config"
	"github.com/turnd/turnd/pkg/server"
)

// Only what is relayed is charged and counted: a host with no permission
// sending to a relay port spends nothing of the allocation's rate, shows in
// no relayed total and fills no limits.total_bps.

// clientTransports are the client transports each test here runs over.
var clientTransports = []string{"udp", "tcp", "tls"}

// serveTLS adds a TLS listener to cfg.
func serveTLS(t *testing.T, cfg *config.Config) {
	t.Helper()
	cfg.Listen.TLS = []string{"127.0.0.1:0"}
	cfg.TLS.CertFile, cfg.TLS.KeyFile = writeCert(t, t.TempDir(), 1)
}

// dialOver connects demo to s over transport ("udp", "tcp" or "tls").
func dialOver(t *testing.T, s *server.Server, transport string) *testturn.Client {
	t.Helper()
	if transport == "tls" {
		return testturn.DialTLS(t, s.TLSAddrs()[0].String(), &tls.Config{InsecureSkipVerify: true}, "demo", "demo") //nolint:gosec // self-signed test certificate
	}
	return dial(t, s, transport)
}

// dataFrom reports whether frame is a Data indication carrying data that starts with prefix.
func dataFrom(frame, prefix []byte) bool {
	m := &stun.Message{Raw: frame}
	if m.Decode() != nil || m.Type != stun.NewType(stun.MethodData, stun.ClassIndication) {
		return false
	}
	data, err := m.Get(stun.AttrData)
	return err == nil && bytes.HasPrefix(data, prefix)
}

// TestStrangerCannotSpendAnAllocationsRate: with limits.max_bps at 1 Mbit/s,
// a permitted peer sending 80 kbit/s (100 datagrams of 100 bytes, one every
// 10 ms) reaches the client whole while a host with no permission sends
// 60 kB datagrams 8 times a second (3.8 Mbit/s) to the relay port, for UDP,
// TCP and TLS clients: the junk, never relayed, is never charged to the
// allocation's rate.
func TestStrangerCannotSpendAnAllocationsRate(t *testing.T) {
	for _, transport := range clientTransports {
		t.Run(transport, func(t *testing.T) {
			const datagrams = 100
			opts := testOptions()
			opts.Config.Limits.MaxBPS = 1_000_000
			serveTLS(t, &opts.Config)
			s := start(t, opts)
			c := dialOver(t, s, transport)
			relayed := c.MustAllocate()
			peer, stranger := listenPeer(t, "127.0.0.1"), listenPeer(t, "127.0.0.2")
			mustPermit(t, c, peer.addr())

			stop, done := make(chan struct{}), make(chan struct{})
			go func() {
				defer close(done)
				junk := make([]byte, 60_000)
				tick := time.NewTicker(125 * time.Millisecond)
				defer tick.Stop()
				for {
					_, _ = stranger.WriteToUDP(junk, relayed)
					select {
					case <-stop:
						return
					case <-tick.C:
					}
				}
			}()
			defer func() { close(stop); <-done }()
			sent := make(chan error, 1)
			go func() {
				tick := time.NewTicker(10 * time.Millisecond)
				defer tick.Stop()
				payload := append([]byte("peer"), make([]byte, 96)...)
				for range datagrams {
					<-tick.C
					if _, err := peer.WriteToUDP(payload, relayed); err != nil {
						sent <- err
						return
					}
				}
				sent <- nil
			}()
			got := 0
			for got < datagrams {
				frame, err := c.ReadFrame(2 * time.Second)
				if err != nil {
					break // the sender is done or the rest was dropped
				}
				if dataFrom(frame, []byte("peer")) {
					got++
				}
			}
			if err := <-sent; err != nil {
				t.Fatal(err)
			}
			u := awaitUsage(t, s, s.Sessions("demo")[0], func(u traffic.Usage) bool { return u.FromPeerPackets >= datagrams })
			t.Logf("%s: %d of %d datagrams arrived; usage %+v", transport, got, datagrams, u)
			if got != datagrams {
				t.Fatalf("%d of the permitted peer's %d datagrams arrived while a stranger sent junk", got, datagrams)
			}
			if u.RateLimited != 0 || u.FromPeerPackets != datagrams || u.NoPermission == 0 {
				t.Fatalf("usage %+v: want %d datagrams relayed, none rate-limited, the junk counted apart", u, datagrams)
			}
		})
	}
}

// TestJunkIsCountedApart: 1000 datagrams of 1000 bytes from a host with
// no permission are neither in the allocation's usage (live or in its
// record) nor in the relayed totals (turnd_relayed_*) nor in the per-user
// traffic, but counted as dropped for want of a permission, datagrams and
// bytes, for UDP, TCP and TLS clients. The permitted peer's 40 datagrams
// are, exactly.
func TestJunkIsCountedApart(t *testing.T) {
	for _, transport := range clientTransports {
		t.Run(transport, func(t *testing.T) {
			const rounds, perRound, size = 40, 25, 1000
			opts := testOptions()
			opts.Config.HTTP.MetricsUsers = []string{"demo"}
			serveTLS(t, &opts.Config)
			records := usageLog(&opts)
			tr := &traffic.Counters{}
			opts.Traffic = tr
			s := start(t, opts)
			c := dialOver(t, s, transport)
			relayed := c.MustAllocate()
			peer, stranger := listenPeer(t, "127.0.0.1"), listenPeer(t, "127.0.0.2")
			mustPermit(t, c, peer.addr())

			// The relay socket is read in order: once the peer's marker
			// reaches the client, the junk sent before it has been handled,
			// and no more than a round waits in the socket's buffer. A
			// stream client's connection still being written (an answer)
			// drops a datagram as client_busy, not relayed: the marker is
			// sent again then.
			junk, marker := make([]byte, size), []byte("mark")
			busy := &tr.DroppedToClient[traffic.ClientBusy]
			for range rounds {
				for range perRound {
					if _, err := stranger.WriteToUDP(junk, relayed); err != nil {
						t.Fatal(err)
					}
				}
				awaitMarker(t, c, func() error { _, err := peer.WriteToUDP(marker, relayed); return err }, marker, busy)
			}
			want := traffic.Usage{FromPeerPackets: rounds, FromPeerBytes: rounds * uint64(len(marker)), Permissions: 1,
				NoPermission: rounds * perRound}
			if u := awaitUsage(t, s, s.Sessions("demo")[0], func(u traffic.Usage) bool { return u == want }); u != want {
				t.Fatalf("live usage %+v, want %+v", u, want)
			}
			if code := c.Refresh(0); code != 0 {
				t.Fatalf("Refresh 0: error %d", code)
			}
			wantFields(t, nextRecord(t, records), map[string]any{
				"from_peer_packets": uint64(rounds), "from_peer_bytes": uint64(rounds * len(marker)),
				"no_permission_packets": uint64(rounds * perRound), "rate_limited_packets": uint64(0),
			})
			if tr.FromPeerPackets.Load() != rounds || tr.FromPeerBytes.Load() != rounds*uint64(len(marker)) {
				t.Errorf("relayed totals %d datagrams, %d bytes from peers; want %d, %d",
					tr.FromPeerPackets.Load(), tr.FromPeerBytes.Load(), rounds, rounds*len(marker))
			}
			if d := &tr.DroppedToClient[traffic.NoPermission]; d.Packets.Load() != rounds*perRound || d.Bytes.Load() != rounds*perRound*size {
				t.Errorf("dropped for no permission: %d datagrams, %d bytes; want %d, %d",
					d.Packets.Load(), d.Bytes.Load(), rounds*perRound, rounds*perRound*size)
			}
			if u := s.UserTraffic()["demo"]; u.FromPeerBytes != rounds*uint64(len(marker)) {
				t.Errorf("per-user traffic of demo: %d bytes from peers, want %d", u.FromPeerBytes, rounds*len(marker))
			}
		})
	}
}

// TestJunkDoesNotFillTotalBPS: with limits.total_bps at 2 Mbit/s, 4 Mbit/s
// of junk at one relay port from a host with no permission is not relayed
// traffic, so a new Allocate from anyone else still succeeds, not 486.
func TestJunkDoesNotFillTotalBPS(t *testing.T) {
	opts := testOptions()
	opts.Config.Limits.TotalBPS = 2_000_000
	s := start(t, opts)
	victim := dial(t, s, "udp")
	relayed := victim.MustAllocate() // the first sample of the relayed rate
	stranger := listenPeer(t, "127.0.0.2")
	junk := make([]byte, 1000)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for end := time.Now().Add(1200 * time.Millisecond); time.Now().Before(end); {
		<-tick.C
		for range 5 { // 500 kB/s
			if _, err := stranger.WriteToUDP(junk, relayed); err != nil {
				t.Fatal(err)
			}
		}
	}
	if code := testturn.ErrorCode(dialAs(t, s, "tcp", "demo", "demo").Allocate()); code != 0 {
		t.Fatalf("Allocate while a stranger sent junk at a relay port: error %d", code)
	}
}

// awaitMarker sends marker with send and reads frames until it arrives,
// sending it again each time busy counts it dropped on a busy client
// connection (at most 5 times), for waitTimeout in all.
func awaitMarker(t *testing.T, c *testturn.Client, send func() error, marker []byte, busy *traffic.Drops) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for tries := 0; tries < 5; tries++ {
		dropped := busy.Packets.Load()
		if err := send(); err != nil {
			t.Fatal(err)
		}
		for busy.Packets.Load() == dropped {
			if time.Now().After(deadline) {
				t.Fatal("the marker did not arrive")
			}
			frame, err := c.ReadFrame(50 * time.Millisecond)
			if err == nil && dataFrom(frame, marker) {
				return
			}
		}
	}
	t.Fatal("the marker was dropped on a busy connection 5 times")
}
