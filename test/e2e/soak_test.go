package e2e

import (
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/turnd/turnd/internal/testturn"
)

// The churn: clients that allocate, relay a few echoes and release, over
// and over. CI runs it for soakDefault; `make soak` sets SOAK_DURATION.
const (
	soakDefault    = 15 * time.Second
	soakUDPClients = 24
	soakTCPClients = 8
	soakEchoes     = 3 // per allocation
)

// Tolerances for "back to the baseline", compared with what a leak of one
// object per allocation would add after tens of thousands of allocations:
//   - goroutines: a scrape's own connection may still be closing;
//   - descriptors: the same connection's socket;
//   - live heap: the measurement itself moves by up to ~1 MiB between
//     runs with no leak (see liveHeap: a collection marks what is allocated
//     while it runs as live), and Go maps keep their buckets after the
//     peak. 2 MiB is ~40 B per allocation of a CI run (any leaked map entry
//     or struct per allocation exceeds that), ~2 B per allocation of a
//     5-minute `make soak`.
const (
	soakGoroutineSlack = 3
	soakFDSlack        = 2
	soakHeapSlack      = 2 << 20
)

// TestSoak churns allocations over UDP and TCP for a bounded time, then
// checks that turnd's goroutines, open descriptors and live heap (from its
// /metrics) come back to their baseline: nothing is kept per allocation.
func TestSoak(t *testing.T) {
	duration := soakDuration(t)
	cfg := testConfig()
	cfg.Log.Level = "info" // the harness waits for "turnd serving"
	// The limiter stays on, so its per-address state is part of what must
	// not grow, but high: liveHeap's Binding requests all come from
	// 127.0.0.1, and the default (50/s per address) would drop most.
	cfg.Limits.UnauthenticatedRate = 1_000_000
	cfg.Limits.UserAllocateRate = 1_000_000 // one user churns on purpose
	path := writeConfig(t, cfg)
	srv := startTurndFile(t, path)
	// Then warn: every allocation logs two info lines, and a million of
	// them would pile up in the harness's memory. The reload shows in
	// /metrics, not in the log, since "reloaded" is an info line.
	cfg.Log.Level = "warn"
	rewriteConfig(t, path, cfg)
	srv.signal(syscall.SIGHUP)
	srv.waitMetric(`turnd_config_reloads_total{result="success"}`, 1, 5*time.Second)
	peer := echoPeer(t)

	// Warm up so that what exists once per process (accept loops, pools,
	// the first GC cycles) is in the baseline, not in the difference.
	for _, network := range []string{"udp", "tcp"} {
		soakCycle(t, srv, network, "", peer)
	}
	base := srv.settle(t, idleFigures{}, 10*time.Second)

	logged := srv.logCount()
	var allocations, echoes atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var snapshot sync.Once // turnd's state when the first client fails
	began := time.Now()
	deadline := began.Add(duration)
	for i := 0; i < soakUDPClients+soakTCPClients; i++ {
		network := "udp"
		if i >= soakUDPClients {
			network = "tcp"
		}
		wg.Add(1)
		// t.Run from a goroutine: each client is a subtest, so a failure
		// inside testturn stops only that client, on its own goroutine.
		go func() {
			defer wg.Done()
			t.Run(fmt.Sprintf("%s-%02d", network, i), func(t *testing.T) {
				defer func() {
					if t.Failed() {
						snapshot.Do(func() { t.Logf("turnd when this client failed: %s", srv.state()) })
					}
				}()
				for k := 0; time.Now().Before(deadline) && !t.Failed(); k++ {
					soakCycle(t, srv, network, soakClientIP(i, k), peer)
					allocations.Add(1)
					echoes.Add(soakEchoes)
				}
			})
		}()
	}
	go func() { wg.Wait(); close(stop) }()
	peak := srv.watchPeak(stop)
	elapsed := time.Since(began)
	if t.Failed() {
		return
	}

	after := srv.settle(t, base, 10*time.Second)
	n := allocations.Load()
	t.Logf("soak %v: %d UDP + %d TCP clients, %d allocations (%.0f/s), %d echoes, peak %v allocations",
		elapsed.Round(time.Second), soakUDPClients, soakTCPClients, n, float64(n)/elapsed.Seconds(), echoes.Load(), peak.allocations)
	t.Logf("goroutines %v → peak %v → %v; open fds %v → peak %v → %v",
		base.goroutines, peak.goroutines, after.goroutines, base.fds, peak.fds, after.fds)
	t.Logf("live heap %s → %s (%+.1f B per allocation); heap in use %s → peak %s → %s",
		mib(base.liveHeap), mib(after.liveHeap), (after.liveHeap-base.liveHeap)/float64(n),
		mib(base.heapInuse), mib(peak.heapInuse), mib(after.heapInuse))
	if after.liveHeap > base.liveHeap+soakHeapSlack {
		t.Errorf("live heap %s after the soak, baseline %s (+%s allowed)",
			mib(after.liveHeap), mib(base.liveHeap), mib(soakHeapSlack))
	}
	if warned := srv.warnings(logged); len(warned) > 0 {
		t.Errorf("turnd warned during the soak:\n%s", strings.Join(warned, "\n"))
	}
	if peak.allocations < 2 {
		t.Errorf("peak allocations %v: the clients did not overlap", peak.allocations)
	}
}

// soakClientIP is the loopback address client i uses for its k-th
// allocation: each client is a host of its own, and its consecutive
// allocations never share a 5-tuple. A new socket can get the port the last
// one had, and pion/turn v5.1.3 then deletes the new allocation: the old
// one's relay goroutine, ending late, deletes "the allocation of this
// 5-tuple" (TestReallocateFromSameAddress). The soak is about leaks, not
// that bug; 16 addresses per client leave the old goroutine ample time.
func soakClientIP(i, k int) string { return fmt.Sprintf("127.0.%d.%d", 1+i, 2+k%16) }

// soakDuration is SOAK_DURATION (a Go duration) or soakDefault.
func soakDuration(t *testing.T) time.Duration {
	s := os.Getenv("SOAK_DURATION")
	if s == "" {
		return soakDefault
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		t.Fatalf("SOAK_DURATION=%q: want a positive duration such as 5m", s)
	}
	return d
}

// soakCycle is one client's life, from the local address from ("": any):
// allocate, permit the peer, relay soakEchoes echoes, release with a
// zero-lifetime Refresh, close.
func soakCycle(t *testing.T, srv *turnd, network, from string, peer *net.UDPAddr) {
	t.Helper()
	addr := srv.UDP
	if network == "tcp" {
		addr = srv.TCP
	}
	c := testturn.DialFrom(t, network, from, addr, "demo", "demo")
	defer c.Close()
	c.MustAllocate()
	if code := c.Permit(peer); code != 0 {
		t.Fatalf("CreatePermission: error %d", code)
	}
	for i := 0; i < soakEchoes; i++ {
		if !c.Echo(peer, "soak") {
			t.Fatal("no echo through the relay")
		}
	}
	if code := c.Refresh(0); code != 0 {
		t.Fatalf("release: error %d", code)
	}
}
