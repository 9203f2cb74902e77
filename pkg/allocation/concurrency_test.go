package allocation

import (
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestConcurrentUseIsRaceFree: requests, expiry, snapshots and the fast
// path's reads of the routes at once (run with -race), and every
// allocation leaves through Hooks.Ended exactly once.
func TestConcurrentUseIsRaceFree(t *testing.T) {
	var ended atomic.Int64
	tab := New(Limits{}, Hooks{Ended: func(*Allocation, EndReason) { ended.Add(1) }})
	const workers, each = 4, 100
	var wg sync.WaitGroup
	stop := make(chan struct{})
	routes := make(chan *Allocation, workers*each)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				tp, relayed := numbered(uint32(w*each + i + 1))
				k, err := tab.Admit("u", tp.Client.Addr(), UDP)
				if err != nil {
					t.Error(err)
					return
				}
				a := &Allocation{Tuple: tp, User: "u"}
				if err := k.Insert(a, [2]netip.AddrPort{relayed}, time.Duration(i%5+1)*time.Minute, t0); err != nil {
					t.Error(err)
					return
				}
				routes <- a
				now := t0.Add(time.Duration(i) * time.Second)
				_ = tab.Permit(a, []netip.Addr{peerA.Addr(), peerB.Addr()}, now, 0)
				_ = tab.BindChannel(a, 0x4000, peerA, now, 0, 0)
				_, _ = tab.Refresh(a, 0, time.Duration(i%3)*time.Minute, now)
				if i%4 == 0 {
					tab.End(a, EndReleased)
				}
			}
		}()
	}
	var readers sync.WaitGroup
	readers.Add(2)
	go func() { // the fast path
		defer readers.Done()
		for a := range routes {
			a.Route.Permitted(peerA.Addr())
			a.Route.Peer(0x4000)
			a.Route.Number(peerA)
		}
	}()
	go func() { // expiry and reports
		defer readers.Done()
		for now := t0; ; now = now.Add(10 * time.Second) {
			select {
			case <-stop:
				return
			default:
			}
			tab.Expire(now)
			tab.Snapshot()
			tab.List("u")
		}
	}()
	wg.Wait()
	close(routes)
	close(stop)
	readers.Wait()
	tab.Expire(t0.Add(24 * time.Hour))
	if tab.Count() != 0 || len(tab.due) != 0 {
		t.Fatalf("%d allocations and %d deadlines left after every lifetime passed", tab.Count(), len(tab.due))
	}
	if n := ended.Load(); n != workers*each {
		t.Fatalf("Ended called %d times for %d allocations", n, workers*each)
	}
}
