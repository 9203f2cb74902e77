package e2e

import (
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/pion/stun/v4"
)

// What the soak test reads from a running turnd: its resource figures
// (goroutines, descriptors, heap) from /metrics, and its log's warnings.

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

// waitMetric polls /metrics until sample reaches at least want (bounded).
func (p *turnd) waitMetric(sample string, want float64, timeout time.Duration) {
	p.t.Helper()
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for p.scrape()[sample] < want {
		if time.Now().After(deadline) {
			p.t.Fatalf("%s did not reach %v within %v", sample, want, timeout)
		}
		<-tick.C
	}
}

// logCount returns how many lines turnd has logged so far.
func (p *turnd) logCount() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.lines)
}

// warnings returns the log lines at level WARN or above from line from on.
func (p *turnd) warnings(from int) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for i := from; i < len(p.lines); i++ {
		if l := p.lines[i]; l["level"] == "WARN" || l["level"] == "ERROR" {
			out = append(out, p.raw[i])
		}
	}
	return out
}

// state sums up turnd's load for a failure message. It may run on a
// subtest's goroutine, so it does not fail the test itself.
func (p *turnd) state() string {
	s, err := p.tryScrape()
	if err != nil {
		return err.Error()
	}
	return fmt.Sprintf("%v allocations (%v udp, %v tcp), %v goroutines, %v open fds, up %.0fs",
		sumPrefix(s, "turnd_allocations{"), s[`turnd_allocations{transport="udp"}`], s[`turnd_allocations{transport="tcp"}`],
		s["go_goroutines"], s["process_open_fds"], time.Since(time.Unix(int64(s["process_start_time_seconds"]), 0)).Seconds())
}
