package drain_test

import (
	"context"
	"testing"
	"time"

	"github.com/turnd/turnd/pkg/drain"
	"github.com/turnd/turnd/pkg/drain/draintest"
)

// guard bounds every wait, so a broken machine fails a test instead of hanging it.
const guard = 5 * time.Second

var epoch = time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)

// harness runs a Machine on a fake clock and fake allocation count and
// records every OnChange.
type harness struct {
	t       *testing.T
	clock   *draintest.FakeClock
	allocs  *draintest.FakeAllocations
	m       *drain.Machine
	cfg     drain.Config
	signals chan drain.Signal // unbuffered: a send returns once Run has taken it
	changes chan drain.Status
	cancel  context.CancelFunc
	result  chan drain.Result
}

func newHarness(t *testing.T, delay, timeout time.Duration, count int) *harness {
	t.Helper()
	h := &harness{
		t:       t,
		clock:   draintest.NewFakeClock(epoch),
		allocs:  draintest.NewFakeAllocations(count),
		signals: make(chan drain.Signal),
		changes: make(chan drain.Status, 100),
		result:  make(chan drain.Result, 1),
	}
	h.cfg = drain.Config{
		Delay:       delay,
		Timeout:     timeout,
		Clock:       h.clock,
		Allocations: h.allocs,
		OnChange:    func(s drain.Status) { h.changes <- s },
	}
	h.m = drain.New(h.cfg)
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel = cancel
	go func() { h.result <- h.m.Run(ctx, h.signals) }()
	t.Cleanup(func() {
		// Never leave Run behind, even when the test failed half-way.
		cancel()
		select {
		case r := <-h.result:
			h.result <- r
		case <-time.After(guard):
			t.Error("Run did not return after cancel")
		}
	})
	return h
}

func (h *harness) send(s drain.Signal) {
	h.t.Helper()
	select {
	case h.signals <- s:
	case <-time.After(guard):
		h.t.Fatalf("Run did not take signal %v", s)
	}
}

func (h *harness) next() drain.Status {
	h.t.Helper()
	select {
	case s := <-h.changes:
		return s
	case <-time.After(guard):
		h.t.Fatalf("no status change; current %+v", h.m.Status())
	}
	return drain.Status{}
}

func (h *harness) wait() drain.Result {
	h.t.Helper()
	select {
	case r := <-h.result:
		h.result <- r
		return r
	case <-time.After(guard):
		h.t.Fatalf("Run did not return; status %+v", h.m.Status())
	}
	return drain.Result{}
}

// want is the part of a Status that a scenario step predicts.
type want struct {
	phase     drain.Phase
	accepting bool
	allocs    int
}

func draining(accepting bool, allocs int) want { return want{drain.Draining, accepting, allocs} }
func stopped(allocs int) want                  { return want{drain.Stopped, false, allocs} }

type step struct {
	name string
	do   func(h *harness)
	want []want // OnChange statuses this step causes, in order
}

func sig(s drain.Signal) step {
	return step{name: "signal " + s.String(), do: func(h *harness) { h.send(s) }}
}

func advance(d time.Duration) step {
	return step{name: "advance " + d.String(), do: func(h *harness) { h.clock.Advance(d) }}
}

func set(n int) step {
	return step{name: "set count", do: func(h *harness) { h.allocs.Set(n) }}
}

func cancel() step {
	return step{name: "cancel", do: func(h *harness) { h.cancel() }}
}

func closeSignals() step {
	return step{name: "close signals", do: func(h *harness) { close(h.signals) }}
}

func accepting(want bool) step {
	return step{name: "check Accepting", do: func(h *harness) {
		if got := h.m.Accepting(); got != want {
			h.t.Errorf("Accepting() = %v, want %v", got, want)
		}
		// The allocations refuse in the same step as the machine does.
		if got := h.allocs.Admitting(); got != want {
			h.t.Errorf("allocations admitting = %v, want %v", got, want)
		}
	}}
}

func (s step) then(w ...want) step { s.want = w; return s }
