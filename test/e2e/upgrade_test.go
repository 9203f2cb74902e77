package e2e

import (
	"crypto/tls"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/turnd/turnd/internal/testturn"
	"github.com/turnd/turnd/pkg/config"
)

// upgradeConfig is testConfig on fixed ports, as a deployment names them
// (UDP and TCP on one number, as on 3478): the successor finds in its
// config the very addresses whose sockets it inherits.
func upgradeConfig(t *testing.T) config.Config {
	t.Helper()
	cfg := testConfig()
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(testturn.FreePort(t)))
	cfg.Listen.UDP, cfg.Listen.TCP = []string{addr}, []string{addr}
	cfg.HTTP.Address = net.JoinHostPort("127.0.0.1", strconv.Itoa(testturn.FreeTCPPort(t)))
	return cfg
}

// withFixedTLS adds a TLS listener on a fixed port to cfg and returns a
// client configuration that trusts its certificate.
func withFixedTLS(t *testing.T, cfg *config.Config) *tls.Config {
	t.Helper()
	clientTLS := withTLS(t, cfg)
	cfg.Listen.TLS = []string{net.JoinHostPort("127.0.0.1", strconv.Itoa(testturn.FreeTCPPort(t)))}
	return clientTLS
}

// handedOver waits for the old process's "handed over" line and the new
// one's "took over" from index from on, and checks they agree on what
// moved: moved allocations went over, stayed stayed behind.
func (l *lineage) handedOver(from int, next *proc, moved, stayed int) {
	l.t.Helper()
	line, _ := l.log.waitLogFrom(from, "handed over", 10*time.Second)
	took, _ := l.log.waitLogFrom(from, "took over", 10*time.Second)
	l.t.Logf("handed over: %v; took over: %v", line, took)
	if line["successor"] != float64(next.pid) {
		l.t.Errorf("handed over to successor %v, want %d", line["successor"], next.pid)
	}
	if stayed >= 0 && line["allocations_stayed"] != float64(stayed) {
		l.t.Errorf("allocations_stayed %v, want %d", line["allocations_stayed"], stayed)
	}
	if moved >= 0 && line["allocations_moved"] != float64(moved) {
		l.t.Errorf("allocations_moved %v, want %d", line["allocations_moved"], moved)
	}
	if took["allocations"] != line["allocations_moved"] {
		l.t.Errorf("took over %v allocations, %v were handed over", took["allocations"], line["allocations_moved"])
	}
}

// TestUpgradeUclient: coturn's load tester over UDP (channels, and Send
// indications) and over TCP keeps relaying through `turnd upgrade` in the
// middle of its run with 0 % loss; the old process exits 0 and the new one
// serves new clients on the same listeners.
func TestUpgradeUclient(t *testing.T) {
	l := startUpgradable(t, writeConfig(t, upgradeConfig(t)))
	peer := strconv.Itoa(startPeer(t))
	const m, n = 4, 250 // 250 messages 20 ms apart: 5 s of traffic per client
	base := []string{"-u", "demo", "-w", "demo", "-e", "127.0.0.1", "-r", peer, "-X",
		"-m", strconv.Itoa(m), "-n", strconv.Itoa(n), "-z", "20", "-l", "100"}
	cases := []struct {
		name, server string
		flags        []string
	}{
		{"udp channels", l.log.UDP, nil},
		{"udp send indications", l.log.UDP, []string{"-s"}},
		{"tcp", l.log.TCP, []string{"-t"}},
	}
	runs := make([]*uclientRun, len(cases))
	for i, tc := range cases {
		runs[i] = startUclient(t, uclientTimeout, tc.server, append(append([]string{}, tc.flags...), base...)...)
	}
	for i, r := range runs {
		select {
		case <-r.sending:
		case res := <-r.done:
			t.Fatalf("%s: uclient ended before sending: %v\n%s", cases[i].name, res.err, tail(res.out))
		}
	}

	old := l.serving()
	next := l.upgrade()
	l.handedOver(0, next, -1, 0)
	if code := old.waitGone(t, 10*time.Second, l.log); code != 0 {
		t.Errorf("the old turnd exited %d after handing over, want 0", code)
	}
	for i, r := range runs {
		res := r.wait()
		if res.err != nil {
			t.Fatal(res.err)
		}
		t.Run(cases[i].name, func(t *testing.T) { requireZeroLoss(t, res, m*n) })
	}

	// The listeners are the new process's, and it serves new clients.
	requireOwner(t, "the UDP listener", "udp", l.log.UDP, "", next, old, next)
	requireOwner(t, "the TCP listener", "tcp", l.log.TCP, "0.0.0.0:0", next, old, next)
	echo := echoPeer(t)
	relayed(t, testturn.Dial(t, "udp", l.log.UDP, "demo", "demo"), echo)
	relayed(t, testturn.Dial(t, "tcp", l.log.TCP, "demo", "demo"), echo)
}

// TestUpgradePionStreams: a 200 packets/s numbered stream from pion's
// client over UDP and over TCP, through its relay to an echo peer, crosses
// an upgrade with every number back exactly once, from the same relayed
// address; the next Refresh (the nonce still valid) and the final
// Refresh(0) are answered by the new process, which writes the only usage
// record, with the whole stream's counts and the original start. The
// kernel dropped no UDP datagram for a full receive buffer meanwhile.
func TestUpgradePionStreams(t *testing.T) {
	for _, network := range []string{"udp", "tcp"} {
		t.Run(network, func(t *testing.T) {
			l := startUpgradable(t, writeConfig(t, upgradeConfig(t)))
			server := l.log.UDP
			if network == "tcp" {
				server = l.log.TCP
			}
			peer := newCountingPeer(t)
			c, tap, _ := pionDial(t, network, server, nil)
			allocated := time.Now()
			s, pc, relay := relayStream(t, c, peer)
			s.waitEchoes(t, streamRate, 10*time.Second) // a second of traffic before

			drops := readRcvbufErrors(t)
			mark := tap.received()
			old := l.serving()
			began := time.Now()
			next := l.upgrade()
			l.handedOver(0, next, 1, 0)
			if code := old.waitGone(t, 10*time.Second, l.log); code != 0 {
				t.Errorf("the old turnd exited %d after handing over, want 0", code)
			}
			s.waitEchoes(t, s.echoed()+streamRate, 10*time.Second) // and a second on the new process alone

			// The old process is gone: whatever answers now is the new one.
			requireOwner(t, "the relayed socket", "udp", relay.String(), "", next, old, next)
			requireOwner(t, "the HTTP listener", "tcp", l.log.HTTP, "0.0.0.0:0", next, old, next)
			if n := sumPrefix(l.log.scrape(), "turnd_allocations{"); n != 1 {
				t.Errorf("the new process counts %v allocations, want the 1 it took over", n)
			}
			refresh(t, c, tap, refreshTo)
			res := s.finish(t)
			res.requirePerfect(t, network+" stream across the upgrade")
			if !res.gapEnd.IsZero() {
				t.Logf("the longest gap ended %v from the start of the upgrade (negative: before it)", res.gapEnd.Sub(began).Round(time.Millisecond))
			}
			if after := readRcvbufErrors(t); after != drops {
				t.Errorf("UDP receive-buffer errors moved across the upgrade: %+v -> %+v", drops, after)
			}
			if src := peer.sources(); len(src) != 1 || src[relay.String()] != res.sent {
				t.Errorf("the peer got datagrams from %v, want all %d from the relayed address %v", src, res.sent, relay)
			}
			if errs := tap.errorsSince(mark); len(errs) > 0 {
				t.Errorf("error responses after the upgrade: %v", errs)
			}
			if recs := l.log.usageRecords("", ""); len(recs) != 0 {
				t.Fatalf("usage records before the release: %v", recs)
			}

			if err := pc.Close(); err != nil { // Refresh(0)
				t.Fatalf("close: %v", err)
			}
			rec := usageRecord(t, l.log, relay.String())
			start, _ := time.Parse(time.RFC3339Nano, rec["start"].(string))
			if rec["reason"] != "released" || rec["transport"] != network ||
				rec["to_peer_packets"] != float64(res.sent) || rec["from_peer_packets"] != float64(res.sent) ||
				start.Before(allocated.Add(-time.Second)) || !start.Before(began) {
				t.Errorf("usage record %v, want released over %s with %d packets each way, started at the allocation (%v), before the upgrade",
					rec, network, res.sent, allocated.UTC())
			}
		})
	}
}
