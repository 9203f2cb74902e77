package fleet

import (
	"context"
	"errors"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/turnd/turnd/pkg/drain/draintest"
)

// changes records OnChange's calls.
type changes chan bool

func (ch changes) record(up bool, _ error) { ch <- up }

// next waits for the next transition and fails unless it is want.
func (ch changes) next(t *testing.T, want bool) {
	t.Helper()
	select {
	case up := <-ch:
		if up != want {
			t.Fatalf("OnChange(%v), want OnChange(%v)", up, want)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("no OnChange(%v) within 5s", want)
	}
}

// none fails if a transition was reported that the test did not expect.
func (ch changes) none(t *testing.T) {
	t.Helper()
	select {
	case up := <-ch:
		t.Fatalf("unexpected OnChange(%v)", up)
	default:
	}
}

// probeUntilUp moves the fake clock a probe interval at a time until the
// Client reports up; the probe timer may not be armed yet on the first try.
func probeUntilUp(t *testing.T, clock *draintest.FakeClock, c *Client) {
	t.Helper()
	eventually(t, 5*time.Second, c.Node()+" up again", func() bool {
		clock.Advance(probeEvery)
		return c.Stats().Up
	})
}

// TestSlowRedisFailsFast: a Redis that stops answering costs one Admit its
// deadline; after that Admits fail at once with ErrUnavailable, OnChange
// says down once, and only the probe brings the Client back, with the
// allocations held meanwhile counted.
func TestSlowRedisFailsFast(t *testing.T) {
	r := startRedis(t)
	clock := draintest.NewFakeClock(time.Now())
	ch := make(changes, 8)
	a := r.open(Options{Node: "a", Lease: 10 * time.Second, Timeout: 250 * time.Millisecond,
		Clock: clock, OnChange: ch.record})
	mustAdmit(t, a, "alice", 0, 0, nil)

	r.pause()
	start := time.Now()
	mustAdmit(t, a, "alice", 0, 0, ErrUnavailable)
	if d := time.Since(start); d > time.Second {
		t.Errorf("first Admit on a paused Redis took %v; its deadline is 250ms", d)
	}
	ch.next(t, false)
	if s := a.Stats(); s.Up || s.Err == nil {
		t.Errorf("Stats() while down = %+v, want down with its error", s)
	}
	start = time.Now()
	for range 10 {
		mustAdmit(t, a, "alice", 0, 0, ErrUnavailable)
	}
	if d := time.Since(start); d > 100*time.Millisecond {
		t.Errorf("10 Admits while down took %v: they should not wait on Redis", d)
	}
	a.Hold("alice") // the fallback rule let one in
	a.Hold("bob")

	r.resume()
	mustAdmit(t, a, "alice", 0, 0, ErrUnavailable) // down until the probe says otherwise
	probeUntilUp(t, clock, a)
	ch.next(t, true)
	ch.none(t)
	admin := r.admin()
	al, _ := admin.HGet(ctxT(t), "t:users:alice", "a").Int()
	bo, _ := admin.HGet(ctxT(t), "t:users:bob", "a").Int()
	if al != 2 || bo != 1 {
		t.Errorf("after the outage Redis counts alice %d, bob %d on a; want 2, 1", al, bo)
	}
	mustAdmit(t, a, "alice", 2, 0, ErrUserQuota)
	if s := a.Stats(); s.Outages != 1 || s.Err != nil {
		t.Errorf("Stats() = %+v, want 1 outage and no error", s)
	}
}

// TestRedisRestartRestoresCounts: a Redis killed and started empty gets
// every node's counts back from the nodes once they find it again.
func TestRedisRestartRestoresCounts(t *testing.T) {
	r := startRedis(t)
	ca, cb := draintest.NewFakeClock(time.Now()), draintest.NewFakeClock(time.Now())
	cha, chb := make(changes, 8), make(changes, 8)
	a := r.open(Options{Node: "a", Lease: 10 * time.Second, Clock: ca, OnChange: cha.record})
	b := r.open(Options{Node: "b", Lease: 10 * time.Second, Clock: cb, OnChange: chb.record})
	mustAdmit(t, a, "alice", 2, 0, nil)
	mustAdmit(t, b, "alice", 2, 0, nil)

	r.stop()
	cha.next(t, false) // the control subscription notices the crash
	chb.next(t, false)
	r.start()
	probeUntilUp(t, ca, a)
	probeUntilUp(t, cb, b)
	c := r.open(Options{Node: "c"})
	mustAdmit(t, c, "alice", 2, 0, ErrUserQuota)
	b.Release("alice")
	eventually(t, 2*time.Second, "b's release reaches c", func() bool {
		return c.Admit(ctxT(t), "alice", 2, 0) == nil
	})
}

// TestCloseBoundedAndClean: Close returns in bounded time even when Redis
// does not answer, and leaves none of the Client's goroutines behind.
func TestCloseBoundedAndClean(t *testing.T) {
	r := startRedis(t)
	before := runtime.NumGoroutine()
	a := r.open(Options{Node: "a"}) // lease 600ms: Close has about 200ms
	mustAdmit(t, a, "alice", 0, 0, nil)
	a.Usage(Record{Allocation: "x", User: "alice"})

	r.pause()
	defer r.resume()
	start := time.Now()
	err := a.Close()
	if d := time.Since(start); d > time.Second {
		t.Errorf("Close took %v with Redis paused", d)
	}
	t.Logf("Close with Redis paused: %v", err)
	if err := a.Close(); !errors.Is(err, ErrClosed) {
		t.Errorf("second Close = %v, want ErrClosed", err)
	}
	mustAdmit(t, a, "alice", 0, 0, ErrClosed)
	eventually(t, 2*time.Second, "goroutines stopped", func() bool {
		return runtime.NumGoroutine() <= before
	})
}

// TestCallerDeadlineNotAnOutage: a caller whose own deadline (1ms) is
// shorter than the Client's gives up on a Redis that answers within the
// Client's deadline; that says nothing of Redis, so the Client stays up.
// CLIENT PAUSE holds Redis's answers for a moment so that the caller's
// deadline, not the reply, comes first on every run.
func TestCallerDeadlineNotAnOutage(t *testing.T) {
	r := startRedis(t)
	ch := make(changes, 8)
	a := r.open(Options{Node: "a", Lease: 10 * time.Second, Timeout: 2 * time.Second,
		Clock: draintest.NewFakeClock(time.Now()), OnChange: ch.record})
	admin := r.admin()
	for _, tc := range []struct {
		name string
		call func(ctx context.Context) error
	}{
		{"Admit", func(ctx context.Context) error { return a.Admit(ctx, "alice", 0, 0) }},
		{"Nodes", func(ctx context.Context) error { _, err := a.Nodes(ctx); return err }},
		{"Sessions", func(ctx context.Context) error { _, err := a.Sessions(ctx); return err }},
		{"Disconnect", func(ctx context.Context) error { return a.Disconnect(ctx, "bob") }},
	} {
		if err := admin.Do(ctxT(t), "CLIENT", "PAUSE", 100, "ALL").Err(); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
		err := tc.call(ctx)
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, os.ErrDeadlineExceeded) || errors.Is(err, ErrUnavailable) {
			t.Errorf("%s past the caller's deadline = %v, want a deadline error and not ErrUnavailable", tc.name, err)
		}
		if s := a.Stats(); !s.Up || s.Outages != 0 {
			t.Fatalf("%s: the caller's deadline took the Client down: %+v", tc.name, s)
		}
	}
	mustAdmit(t, a, "alice", 0, 0, nil) // up without a probe: the fake clock never ran one
	ch.none(t)
}
