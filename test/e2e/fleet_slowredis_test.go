package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/turnd/turnd/internal/testturn"
)

// liveCallBound is how long a live call's Refresh or echo may take while
// Redis hangs: they never wait on it, so far under fleet.timeout.
const liveCallBound = 500 * time.Millisecond

// TestFleetRedisHangs: with Redis frozen (SIGSTOP: slow, not gone) a live
// call's relaying and Refresh answer at once; a new Allocate waits at most
// about fleet.timeout and then falls back to the local limits; /status
// says the fleet is down; once Redis answers again /status says up and the
// allocations made meanwhile count against the fleet limit on another node.
func TestFleetRedisHangs(t *testing.T) {
	f := newFleet(t)
	nodes := f.start("a", "b")
	a, b := nodes[0], nodes[1]
	peer := echoPeer(t)
	call := testturn.Dial(t, "udp", a.UDP, "demo", "demo")
	call.MustAllocate()
	if code := call.Permit(peer); code != 0 {
		t.Fatalf("permission: %d", code)
	}

	f.redis.Pause()
	for i := range 10 {
		began := time.Now()
		echoOnce(t, call, peer, "while Redis hangs "+itoa(i))
		if code := call.Refresh(10 * time.Minute); code != 0 {
			t.Fatalf("Refresh while Redis hangs: %d", code)
		}
		if d := time.Since(began); d > liveCallBound {
			t.Fatalf("an echo and a Refresh took %v while Redis hangs, want < %v", d, liveCallBound)
		}
	}
	began := time.Now()
	if code := allocateCode(t, a, "demo", "demo"); code != 0 {
		t.Fatalf("a (on_outage local) while Redis hangs: %d, want the local fallback", code)
	}
	if d, bound := time.Since(began), f.config("a").Fleet.Timeout+time.Second; d > bound {
		t.Errorf("the Allocate while Redis hangs took %v, want < %v", d, bound)
	}
	eventually(t, 5*time.Second, "a's /status says the fleet is down", func() bool {
		st, _ := a.status()["fleet"].(map[string]any)
		return st != nil && st["up"] == false
	})

	f.redis.Resume()
	for _, p := range nodes {
		eventually(t, 10*time.Second, "/status says the fleet is up again", func() bool {
			st, _ := p.status()["fleet"].(map[string]any)
			return st != nil && st["up"] == true
		})
	}
	eventually(t, 10*time.Second, "a's two allocations counted in Redis", func() bool {
		n, _ := f.redis.Admin().HGet(context.Background(), "turnd:users:demo", "a").Int()
		return n == 2
	})
	// One try: an admission on b would itself fill the user's places.
	if code := allocateCode(t, b, "demo", "demo"); code != 486 {
		t.Fatalf("b after Redis answered again, demo at 2 on a: %d, want 486", code)
	}
	echoOnce(t, call, peer, "after Redis answered again")
}
