package e2e

import (
	"net"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/turnd/turnd/internal/testturn"
	"github.com/turnd/turnd/pkg/httpapi"
)

// TestKernelCountsExactWhileLive: what the kernel relays for a live
// allocation is in every reader's figures at once, exactly: /sessions,
// the per-user metrics, turnd_relayed_packets_total and _bytes_total, and
// the throughput limits.total_bps admits new allocations by, which refuses
// the next Allocate (486) once the kernel has relayed past it.
func TestKernelCountsExactWhileLive(t *testing.T) {
	k := newKernelNet(t)
	cfg := kernelConfig(t)
	cfg.HTTP.MetricsUsers = []string{"demo"}
	cfg.Limits.TotalBPS = 100_000
	srv := k.start(t, cfg, "tc")
	server := net.JoinHostPort(kServer4, strconv.Itoa(kTURNPort))
	peer := k.listenPeer(t, kPeer4)
	began := time.Now() // this Allocate takes total_bps's first sample
	ch := k.openChannel(t, kClient4, server, peer)

	// total_bps's rate is an average over at least a second: relay for a
	// little longer, about 15 kB a batch each way, far past the limit (a
	// batch is small enough for the client's default receive buffer).
	// Nothing reads a figure meanwhile, so each reader below must settle
	// the kernel's counts itself.
	before := srv.kernel(t)
	var packets, bytes int
	relay := func(batch []string) {
		ch.relayBoth(t, batch)
		packets += len(batch)
		for _, p := range batch {
			bytes += len(p)
		}
	}
	for i := 0; i < 40 && time.Since(began) < 1200*time.Millisecond; i++ {
		relay(payloads("live"+strconv.Itoa(i), 60))
		time.Sleep(50 * time.Millisecond) // a bounded rate, not a wait for an event
	}
	if code := testturn.ErrorCode(k.client.dialFrom(t, "udp", kClient4, server).Allocate()); code != 486 {
		t.Errorf("Allocate after %d bytes relayed in %v past limits.total_bps %d: error %d, want 486",
			2*bytes, time.Since(began).Round(time.Millisecond), cfg.Limits.TotalBPS, code)
	}

	relay(payloads("unread by /sessions", 30))
	sessions := srv.sessions(t)
	i := slices.IndexFunc(sessions, func(s httpapi.Session) bool { return s.ID == ch.relay.String() })
	if i < 0 {
		t.Fatalf("/sessions does not list the allocation %v", ch.relay)
	}
	if s := sessions[i]; s.ToPeerPackets != uint64(packets) || s.FromPeerPackets != uint64(packets) ||
		s.ToPeerBytes != uint64(bytes) || s.FromPeerBytes != uint64(bytes) {
		t.Errorf("/sessions: %d/%d packets and %d/%d bytes to/from the peer, want %d and %d each way",
			s.ToPeerPackets, s.FromPeerPackets, s.ToPeerBytes, s.FromPeerBytes, packets, bytes)
	}
	relay(payloads("unread by /metrics", 30))
	body := srv.ns.get(t, "http://"+srv.HTTP+"/metrics")
	for _, dir := range []string{"to_peer", "from_peer"} {
		for sample, want := range map[string]int{
			`turnd_user_packets_total{direction="` + dir + `",user="demo"}`: packets,
			`turnd_user_bytes_total{direction="` + dir + `",user="demo"}`:   bytes,
			`turnd_relayed_packets_total{direction="` + dir + `"}`:          packets,
			`turnd_relayed_bytes_total{direction="` + dir + `"}`:            bytes,
		} {
			if got := sampleValue(t, body, sample); got != float64(want) {
				t.Errorf("%s = %v, want %d", sample, got, want)
			}
		}
	}
	if got := srv.kernel(t); got.toPeer-before.toPeer < float64(packets)/2 || got.toClient-before.toClient < float64(packets)/2 {
		t.Errorf("the kernel path counted %v to the peer and %v to the client of %d datagrams each way, want at least half",
			got.toPeer-before.toPeer, got.toClient-before.toClient, packets)
	}
}
