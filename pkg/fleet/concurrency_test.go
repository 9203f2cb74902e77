package fleet

import (
	"fmt"
	"maps"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestConcurrentAdmitsExact: many Admits of one user at once on three
// nodes let exactly the limit in: the count and the increment are one
// step in Redis. The lease is long so that beats, too, have deadlines a
// runner busy with 60 Admits meets: no lease lapses here.
func TestConcurrentAdmitsExact(t *testing.T) {
	r := startRedis(t)
	o := func(name string) Options { return Options{Node: name, Lease: 10 * time.Second} }
	nodes := []*Client{r.open(o("a")), r.open(o("b")), r.open(o("c"))}
	const limit, perNode = 5, 20
	var admitted atomic.Int32
	var wg sync.WaitGroup
	for _, n := range nodes {
		for range perNode {
			wg.Go(func() {
				if n.Admit(ctxT(t), "alice", limit, 0) == nil {
					admitted.Add(1)
				}
			})
		}
	}
	wg.Wait()
	if got := admitted.Load(); got != limit {
		t.Errorf("%d of %d concurrent Admits let in, want exactly %d", got, 3*perNode, limit)
	}
}

// TestRebuildsDuringTraffic: rebuilds racing Admits and Releases leave
// Redis holding exactly this node's books once the traffic stops: no
// absolute write overwrote a change in flight.
func TestRebuildsDuringTraffic(t *testing.T) {
	r := startRedis(t)
	a := r.open(Options{Node: "a", Lease: 10 * time.Second})
	const workers, rounds = 4, 300
	var wg sync.WaitGroup
	var admitted atomic.Int32
	kick := make(chan struct{}, 1) // a rebuild per kick, so Admits get through between them
	for w := range workers {
		wg.Go(func() {
			user := fmt.Sprint("u", w)
			// Count rounds by Admits let in: one that falls back (a rebuild
			// is running) returns at once and would use up the rounds.
			for i, tries := 0, 0; i < rounds && tries < 100*rounds; tries++ {
				if i%10 == 0 {
					wake(kick)
				}
				if a.Admit(ctxT(t), user, 0, 0) != nil {
					continue // nothing held
				}
				admitted.Add(1)
				if i%3 != 0 { // keep a third of them
					a.Release(user)
				}
				i++
			}
		})
	}
	stop := make(chan struct{})
	rebuilt := make(chan int)
	go func() {
		n := 0
		defer func() { rebuilt <- n }()
		for {
			select {
			case <-stop:
				return
			case <-kick:
			}
			if err := a.rebuild(ctxT(t)); err != nil {
				t.Error(err)
				return
			}
			n++
		}
	}()
	wg.Wait()
	close(stop)
	n := <-rebuilt
	t.Logf("%d rebuilds among %d admitted", n, admitted.Load())
	if n < 10 || admitted.Load() < 100 {
		t.Fatalf("%d rebuilds among %d admitted: too little overlap to mean anything", n, admitted.Load())
	}

	admin := r.admin()
	eventually(t, 2*time.Second, "Redis agrees with the books", func() bool {
		a.counts.mu.Lock()
		held, total := maps.Clone(a.counts.held), a.counts.total
		a.counts.mu.Unlock()
		for w := range workers {
			user := fmt.Sprint("u", w)
			n, _ := admin.HGet(ctxT(t), "t:users:"+user, "a").Int()
			if n != held[user] {
				return false
			}
		}
		n, _ := admin.HGet(ctxT(t), "t:total", "a").Int()
		return n == total
	})
}
