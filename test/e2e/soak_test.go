package e2e

import (
	"fmt"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pion/stun/v4"

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
//   - live heap: the measurement itself moves by up to ~0.5 MiB between
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
	cfg.Log.Level = "info" // debug would log every allocation: the log is not under test
	// The limiter stays on, so its per-address state is part of what must
	// not grow, but high: collectGarbage's Binding requests all come from
	// 127.0.0.1, and its default (50/s per address) would drop most.
	cfg.Limits.UnauthenticatedRate = 1_000_000
	srv := start(t, cfg)
	peer := echoPeer(t)

	// Warm up so that what exists once per process (accept loops, pools,
	// the first GC cycles) is in the baseline, not in the difference.
	for _, network := range []string{"udp", "tcp"} {
		soakCycle(t, srv, network, "", peer)
	}
	base := srv.settle(t, idleFigures{}, 10*time.Second)

	var allocations, echoes atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
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

// idleFigures are turnd's resource counts with no allocation.
type idleFigures struct {
	goroutines, fds     float64
	liveHeap, heapInuse float64
}

// settle waits until turnd holds no allocation and its goroutines and
// descriptors are within the slack of base (if given), then returns its
// figures with the live heap measured by liveHeap. The waits are bounded
// polls of /metrics: turnd has no event for "my goroutines have exited".
func (p *turnd) settle(t *testing.T, base idleFigures, timeout time.Duration) idleFigures {
	t.Helper()
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	var s map[string]float64
	for {
		s = p.scrape()
		allocs := sumPrefix(s, "turnd_allocations{")
		g, fds := s["go_goroutines"], s["process_open_fds"]
		if allocs == 0 && (base.goroutines == 0 ||
			g <= base.goroutines+soakGoroutineSlack && fds <= base.fds+soakFDSlack) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not back to the baseline after %v: %v allocations, goroutines %v (baseline %v), open fds %v (baseline %v)",
				timeout, allocs, g, base.goroutines, fds, base.fds)
		}
		<-tick.C
	}
	f := idleFigures{goroutines: s["go_goroutines"], fds: s["process_open_fds"]}
	f.liveHeap, f.heapInuse = p.liveHeap(t)
	return f
}

// liveHeap makes turnd collect garbage several times, by sending STUN
// Binding requests (each leaves a little garbage) one at a time, and returns
// the smallest live heap (go_gc_heap_live_bytes) those collections found,
// and the heap in use then. The first two collections are not counted: the
// second empties sync.Pools the first only moved to their victim cache. The
// smallest of the next few, because a collection that runs while turnd
// answers a scrape finds the scrape's buffers live. What the others find
// still includes what turnd allocated while they ran, which no client can
// prevent; the figure is for comparing runs taken the same way.
func (p *turnd) liveHeap(t *testing.T) (live, inuse float64) {
	t.Helper()
	const warmup, counted = 2, 5
	conn, err := net.Dial("udp", p.UDP)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	req := build(t, stun.BindingRequest)
	buf := make([]byte, 1500)
	s := p.scrape()
	start := s["go_gc_duration_seconds_count"]
	seen := start + warmup
	live = -1
	for sent := 0; s["go_gc_duration_seconds_count"] < start+warmup+counted; sent++ {
		if sent > 2_000_000 {
			t.Fatalf("turnd ran %v garbage collections in %d Binding requests, want %d",
				s["go_gc_duration_seconds_count"]-start, sent, warmup+counted)
		}
		if _, err := conn.Write(req.Raw); err != nil {
			t.Fatal(err)
		}
		_ = conn.SetReadDeadline(time.Now().Add(time.Second))
		if _, err := conn.Read(buf); err != nil {
			t.Fatalf("binding: %v", err)
		}
		if sent%200 != 199 {
			continue
		}
		s = p.scrape()
		if n := s["go_gc_duration_seconds_count"]; n > seen {
			seen = n
			if l := s["go_gc_heap_live_bytes"]; live < 0 || l < live {
				live, inuse = l, s["go_memstats_heap_inuse_bytes"]
			}
		}
	}
	return live, inuse
}

// soakPeak is the highest of each figure seen while the clients ran.
type soakPeak struct {
	allocations, goroutines, fds, heapInuse float64
}

// watchPeak samples turnd's /metrics every 200 ms until stop is closed.
func (p *turnd) watchPeak(stop <-chan struct{}) soakPeak {
	var peak soakPeak
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return peak
		case <-tick.C:
		}
		s := p.scrape()
		peak.allocations = max(peak.allocations, sumPrefix(s, "turnd_allocations{"))
		peak.goroutines = max(peak.goroutines, s["go_goroutines"])
		peak.fds = max(peak.fds, s["process_open_fds"])
		peak.heapInuse = max(peak.heapInuse, s["go_memstats_heap_inuse_bytes"])
	}
}

func mib(b float64) string { return fmt.Sprintf("%.2f MiB", b/(1<<20)) }
